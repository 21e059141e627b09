"""A stop that hangs says where: after its grace, every thread's stack goes to the log once, and
the stop goes on (once, on cri, SIGTERM had no visible effect for 90 s)."""

from __future__ import annotations

import io
import logging
import threading
from pathlib import Path

import pytest

from kubecore import Kubelet, KubeletConfig
from kubecore._cli.commands import run_forever
from kubecore._cli.output import PullTracker
from kubecore._config.poller import SourcePoller
from kubecore_fake import FakeRuntime


@pytest.mark.timeout(60)
def test_a_stop_that_blocks_logs_every_threads_stack_once_and_goes_on(
    tmp_path: Path,
) -> None:
    runtime = FakeRuntime()
    kubelet = Kubelet(runtime, runtime, config=KubeletConfig(root_dir=str(tmp_path / "root")))
    poller = SourcePoller([], kubelet.update, clock=kubelet.clock)
    stop, release, dumped = threading.Event(), threading.Event(), threading.Event()
    stop.set()  # stop at once: the stop itself is what hangs

    dumps: list[str] = []

    class Dumped(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "has taken more than" in record.getMessage():
                dumps.append(record.getMessage())
                dumped.set()

    def close_runtime_that_blocks() -> None:
        assert release.wait(30), "the watchdog never spoke"

    watcher = logging.getLogger("kubecore._util.watchdog")
    handler = Dumped()
    watcher.addHandler(handler)
    settings = {"port": 0, "node_name": "watchdog-node", "runtime": "fake"}
    codes: list[int] = []
    agent = threading.Thread(
        target=lambda: codes.append(
            run_forever(
                kubelet,
                poller,
                close_runtime_that_blocks,
                settings,
                "",
                io.StringIO(),
                PullTracker(),
                stop=stop,
                stop_grace=0.2,
            )
        )
    )
    try:
        agent.start()
        assert dumped.wait(20), "no stack dump while the stop hung"
        release.set()
        agent.join(20)
    finally:
        release.set()
        watcher.removeHandler(handler)
    assert not agent.is_alive() and codes == [0]  # the stop went on to its end
    [dump] = dumps
    assert dump.startswith("stopping the agent has taken more than 0.2s")
    assert "close_runtime_that_blocks" in dump and "release.wait(30)" in dump
    assert f"({agent.ident}):" in dump  # each thread is named, with its id
