"""A conformance suite for runtime plugins (in the spirit of the CRI's critest).

Any ``ContainerRuntime`` / ``Puller`` pair can prove it honours kubecore's contract by running
these checks against itself. In the plugin's own test suite, write one module::

    import pytest
    import kubecore
    from kubecore.testing.conformance import RuntimeConformance, busybox_workloads

    class TestMyRuntime(RuntimeConformance):
        @pytest.fixture
        def bundle(self):
            bundle = kubecore.load_runtime("mine")
            yield bundle                      # the suite removes what it created itself
            bundle.runtime.close()

        @pytest.fixture
        def workloads(self):
            return busybox_workloads("busybox:1.36")

That is all: every ``test_*`` method below is collected for ``TestMyRuntime``. Fixtures a plugin
may also override:

* ``clock``: the ``Clock`` the suite waits on. The default is the system clock (real time passes
  while it polls). A runtime that runs in virtual time returns its ``ManualClock`` here, so
  every wait advances it instead of sleeping.
* ``unmanaged_container``: a callable that creates a container outside kubecore (say with the
  engine's own client) and returns its id, proving ``snapshot`` and ``list_*`` never show it.
  The default (None) skips that check.
* ``reopen``: a callable returning a new instance of the runtime, loaded as a restarted agent
  loads it (the same factory and options as ``bundle``; the fixture closes what it opened). The
  adoption check makes objects with the first instance, calls ``reopen()``, closes the first
  instance (closing must leave containers running) and checks that the new one shows the same
  ids, labels, annotations and states, and can start, stop and read them. A runtime that cannot
  adopt says ``adopts=False`` in its bundle and the check is skipped with that reason; the
  default (None) skips it too. A runtime whose objects live in one object (the in-memory
  ``fake``) may return the same bundle: the check is then what a new agent handed that object
  sees, and nothing is closed.

Every runtime must also pass the checks of what only docstrings used to say: a start in a
stopped sandbox is a ``Conflict``; exec in a stopped container raises; ``logs(follow=True)``
blocks and streams new lines; ``since`` is honoured; after ``close()`` every call raises a
``ContainerRuntimeError`` promptly (the runtime's objects are then removed through ``reopen``
if given, else left to the ``bundle`` fixture's teardown).

Checks that need something optional (``serve_tcp``, ``consume_memory``, ``pullable_image``, an
event stream, a health checker, node leases: ``NodeClaims``) are skipped when it is missing.

Security context: for each field of ``LinuxContainerSecurityContext`` (and the sandbox's
``sysctls``) the suite starts a container that has it and requires that the runtime either
refuses the container clearly (a ``ContainerRuntimeError`` from ``create_container`` or
``start_container`` whose message names the field) or applies it, as the container itself sees
it: the ``report_security`` workload prints its identity, capabilities, no-new-privileges,
seccomp mode, whether its root filesystem is writable, its security label and a sysctl. A runtime
that cannot run that workload reads the same facts its own way through the ``observe_security``
fixture (the in-memory ``fake`` reads what it recorded).
"""

from __future__ import annotations

import logging
import re
import shlex
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TypeVar

import attrs
import pytest

from kubecore._contract.capabilities import NodeClaims, NodeHolder
from kubecore._contract.errors import (
    Conflict,
    ContainerNotFound,
    ContainerRuntimeError,
    ImageNotFound,
    ImagePullError,
    InvalidConfig,
    RuntimeTimeout,
    SandboxNotFound,
    SandboxUnusable,
)
from kubecore._contract.labels import (
    HASH_ANNOTATION,
    RESTART_COUNT_ANNOTATION,
    container_labels,
    sandbox_labels,
)
from kubecore._contract.protocols import ContainerRuntime, Puller
from kubecore._contract.values import (
    Capability,
    ContainerConfig,
    LinuxContainerSecurityContext,
    Mount,
    NamespaceMode,
    NamespaceOption,
    ProbeOutcome,
    ProbeTarget,
    ProfileType,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    SandboxConfig,
    SandboxState,
    SecurityProfile,
    SELinuxOption,
)
from kubecore._model.imageref import parse_image_ref
from kubecore._model.v1 import ExecAction, Probe
from kubecore._plugins.registry import RuntimeBundle
from kubecore._util.clock import Clock, SystemClock

logger = logging.getLogger(__name__)

T = TypeVar("T")
Command = tuple[str, ...]
MiB = 1024 * 1024
MISSING_ID = "0" * 64
RFC3339_PREFIX = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) ")
RFC3339_STAMP = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d) ")


def _echo(text: str) -> Command:
    return ("echo", text)


def _sleep(seconds: float) -> Command:
    return ("sleep", f"{seconds:g}")


REPORT_PREFIX = "kcsec "
PORT_RANGE_SYSCTL = "net.ipv4.ip_local_port_range"


@attrs.frozen
class SecurityReport:
    """What a container's process sees of its security context."""

    uid: int
    gid: int
    groups: frozenset[int]
    cap_eff: int
    """The effective capability set, as a bit mask (``CapEff`` in ``/proc/self/status``)."""
    no_new_privs: bool
    seccomp_mode: int
    """0 none, 1 strict, 2 filter (``Seccomp`` in ``/proc/self/status``)."""
    read_only_root: bool
    label: str = ""
    """The process's security label (``/proc/self/attr/current``: AppArmor or SELinux)."""
    port_range: str = ""
    """``net.ipv4.ip_local_port_range``, blanks normalised to one space."""


def parse_security_report(lines: Iterator[bytes] | list[bytes]) -> SecurityReport | None:
    """The report ``report_security`` printed (None until its last line is there)."""
    values: dict[str, str] = {}
    for raw in lines:
        line = raw.decode(errors="replace").rstrip("\n")
        if line.startswith(REPORT_PREFIX) and "=" in line:
            key, _, value = line[len(REPORT_PREFIX) :].partition("=")
            values[key] = value.strip()
    if "end" not in values:
        return None
    return SecurityReport(
        uid=int(values["uid"]),
        gid=int(values["gid"]),
        groups=frozenset(int(g) for g in values.get("groups", "").split()),
        cap_eff=int(values.get("CapEff", "0"), 16),
        no_new_privs=values.get("NoNewPrivs") == "1",
        seccomp_mode=int(values.get("Seccomp", "0")),
        read_only_root=values.get("rootfs") == "ro",
        label=values.get("label", ""),
        port_range=" ".join(values.get("port_range", "").split()),
    )


def _report_security_script() -> str:
    p = REPORT_PREFIX
    return (
        f'echo "{p}uid=$(id -u)"; echo "{p}gid=$(id -g)"; echo "{p}groups=$(id -G)"; '
        'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status'
        f' | while read k v; do echo "{p}${{k%:}}=$v"; done; '
        f'if touch /.kcsec-probe 2>/dev/null; then rm -f /.kcsec-probe; echo "{p}rootfs=rw";'
        f' else echo "{p}rootfs=ro"; fi; '
        f'echo "{p}label=$(cat /proc/self/attr/current 2>/dev/null)"; '
        f'echo "{p}port_range=$(cat /proc/sys/net/ipv4/ip_local_port_range)"; '
        f'echo "{p}end=1"; '
    )


def _print_twice(first: str, second: str, seconds: float) -> Command:
    script = (
        f"echo {shlex.quote(first)}; sleep {seconds:g}; echo {shlex.quote(second)}; "
        "trap 'exit 0' TERM; while true; do sleep 1; done"
    )
    return ("sh", "-c", script)


@attrs.frozen
class Workloads:
    """Commands for the runtime's test image, so the suite knows how to make it behave."""

    image: str
    """The test image. The suite pulls it only if ``image_status`` does not find it."""
    run_forever: Command
    """Runs until stopped, and exits 0 promptly on TERM."""
    print_and_run: Callable[[str], Command]
    """Prints the text (one line) then runs like ``run_forever``."""
    exit_with: Callable[[int], Command]
    """Exits at once with the code (also used as an exec command)."""
    serve_tcp: Callable[[int], Command] | None = None
    """Listens on the TCP port until stopped (exits promptly on TERM); None if unsupported."""
    check_tcp: Callable[[int], Command] | None = None
    """An exec command that exits 0 only if something listens on 127.0.0.1:PORT."""
    consume_memory: Command | None = None
    """Allocates memory until the kernel kills it under ``memory_limit``; None if unsupported."""
    memory_limit: int = 32 * MiB
    print_twice: Callable[[str, str, float], Command] = _print_twice
    """Prints the first text, the second that many seconds later, then runs like
    ``run_forever``."""
    echo: Callable[[str], Command] = _echo
    """An exec command that prints the text."""
    sleep: Callable[[float], Command] = _sleep
    """An exec command that takes that many seconds."""
    list_processes: Command | None = None
    """An exec command that prints the command lines of the processes it sees (``ps``); None
    skips the PID-namespace checks."""
    pullable_image: str | None = None
    """An image the suite may pull, use and remove (nothing else may use it); None skips that."""
    report_security: Command | None = None
    """Prints a ``SecurityReport`` (``parse_security_report`` reads it) then runs like
    ``run_forever``; None when the runtime reads it through ``observe_security`` instead."""
    absent_image: str = "localhost:1/kubecore-conformance/absent:never"
    """A reference whose pull must fail (the default points at a closed loopback port)."""
    sandbox_image: str = ""
    tcp_port: int = 8080
    show_mounts: Command | None = None
    """An exec command printing the container's ``/proc/mounts`` (to see a tmpfs and its size);
    None: the suite checks only that a memory-backed mount is applied or refused."""
    timeout: float = 30.0
    """Upper bound of every wait, in (the clock's) seconds."""


def busybox_workloads(image: str = "busybox:1.36", **overrides: object) -> Workloads:
    """Workloads for a busybox image (``sh``, ``sleep``, ``httpd``, ``wget``, ``tail``)."""

    def forever(prefix: str = "") -> Command:
        return ("sh", "-c", f"{prefix}trap 'exit 0' TERM; while true; do sleep 1; done")

    def serve(port: int) -> Command:
        return (
            "sh",
            "-c",
            "trap 'exit 0' TERM; mkdir -p /tmp/www; echo ok > /tmp/www/index.html; "
            f"httpd -f -p {port} -h /tmp/www & wait",
        )

    workloads = Workloads(
        image=image,
        run_forever=forever(),
        report_security=forever(_report_security_script()),
        print_and_run=lambda text: forever(f"echo {shlex.quote(text)}; "),
        exit_with=lambda code: ("sh", "-c", f"exit {code}"),
        serve_tcp=serve,
        check_tcp=lambda port: ("wget", "-q", "-O-", f"http://127.0.0.1:{port}/"),
        consume_memory=("sh", "-c", "tail /dev/zero"),
        show_mounts=("cat", "/proc/mounts"),
        list_processes=("ps",),
    )
    return attrs.evolve(workloads, **overrides)  # type: ignore[arg-type]


def wait_for(
    clock: Clock,
    condition: Callable[[], T | None],
    what: str,
    timeout: float,
    step: float = 0.1,
) -> T:
    """Poll ``condition`` until it returns something truthy, sleeping ``step`` on ``clock``
    between polls (a ``ManualClock`` advances). Bounded in polls and in real time."""
    deadline = clock.monotonic() + timeout
    real_deadline = time.monotonic() + 2 * timeout + 5
    for _ in range(int(timeout / step) + 2):
        value = condition()
        if value:
            return value
        if clock.monotonic() >= deadline or time.monotonic() >= real_deadline:
            break
        clock.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Harness:
    """Creates sandboxes and containers with kubecore's labels, waits, and cleans up."""

    def __init__(self, bundle: RuntimeBundle, workloads: Workloads, clock: Clock) -> None:
        self.bundle = bundle
        self.runtime: ContainerRuntime = bundle.runtime
        self.puller: Puller = bundle.puller
        self.workloads = workloads
        self.clock = clock
        self.prefix = f"kcconf-{uuid.uuid4().hex[:8]}"
        self._serial = 0
        self.sandboxes: list[str] = []
        self.containers: list[str] = []

    def _next(self) -> int:
        self._serial += 1
        return self._serial

    def ensure_image(self, image: str) -> None:
        if self.puller.image_status(image) is None:
            self.puller.pull(image)

    def sandbox_config(self, name: str = "", attempt: int = 0) -> SandboxConfig:
        pod = name or f"{self.prefix}-pod{self._next()}"
        uid = str(uuid.uuid4())
        return SandboxConfig(
            name=pod,
            namespace="conformance",
            uid=uid,
            attempt=attempt,
            hostname=pod[:63],
            labels={
                **sandbox_labels(pod, "conformance", uid),
                "conformance.kubecore.io/kind": "sandbox",
            },
            annotations={"conformance.kubecore.io/note": "spaces, = and / survive"},
            image=self.workloads.sandbox_image,
        )

    def run_sandbox(self, config: SandboxConfig | None = None) -> tuple[str, SandboxConfig]:
        config = config or self.sandbox_config()
        sandbox_id = self.runtime.run_sandbox(config)
        self.sandboxes.append(sandbox_id)
        return sandbox_id, config

    def container_config(
        self,
        sandbox: SandboxConfig,
        command: Command,
        name: str = "",
        image: str = "",
        memory_limit: int | None = None,
    ) -> ContainerConfig:
        container = name or f"c{self._next()}"
        return ContainerConfig(
            name=container,
            image=image or self.workloads.image,
            command=command,
            labels={
                **container_labels(sandbox.name, sandbox.namespace, sandbox.uid, container),
                "conformance.kubecore.io/kind": "container",
            },
            annotations={
                HASH_ANNOTATION: "1a2b3c4d",
                RESTART_COUNT_ANNOTATION: "0",
                "conformance.kubecore.io/note": "spaces, = and / survive",
            },
            memory_limit=memory_limit,
        )

    def create(
        self,
        sandbox: tuple[str, SandboxConfig],
        command: Command,
        name: str = "",
        image: str = "",
        memory_limit: int | None = None,
        security_context: LinuxContainerSecurityContext | None = None,
    ) -> str:
        config = self.container_config(sandbox[1], command, name, image, memory_limit)
        config = attrs.evolve(config, security_context=security_context)
        container_id = self.runtime.create_container(sandbox[0], config, sandbox[1])
        self.containers.append(container_id)
        return container_id

    def start(
        self,
        sandbox: tuple[str, SandboxConfig],
        command: Command,
        name: str = "",
        memory_limit: int | None = None,
    ) -> str:
        container_id = self.create(sandbox, command, name, memory_limit=memory_limit)
        self.runtime.start_container(container_id)
        return container_id

    def wait(self, condition: Callable[[], T | None], what: str) -> T:
        return wait_for(self.clock, condition, what, self.workloads.timeout)

    def wait_state(self, container_id: str, state: RuntimeState) -> RuntimeContainer:
        def reached() -> RuntimeContainer | None:
            status = self.runtime.container_status(container_id)
            return status if status.state is state else None

        return self.wait(reached, f"container {container_id} to be {state.value}")

    def wait_logs(self, container_id: str, text: str) -> list[bytes]:
        def found() -> list[bytes] | None:
            lines = list(self.runtime.logs(container_id))
            return lines if any(text.encode() in line for line in lines) else None

        return self.wait(found, f"{text!r} in the logs of {container_id}")

    def use(self, bundle: RuntimeBundle) -> None:
        """Go on (and clean up) with another instance of the runtime."""
        self.bundle = bundle
        self.runtime = bundle.runtime
        self.puller = bundle.puller

    def abandon(self) -> None:
        """Forget what was made: it is left to the ``bundle`` fixture's teardown."""
        self.containers.clear()
        self.sandboxes.clear()

    def cleanup(self) -> None:
        problems: list[str] = []
        for container_id in reversed(self.containers):
            try:
                self.runtime.remove_container(container_id)
            except Exception as exc:  # every object gets its chance to be removed
                problems.append(f"remove_container({container_id}): {exc!r}")
        for sandbox_id in reversed(self.sandboxes):
            try:
                self.runtime.stop_sandbox(sandbox_id)
                self.runtime.remove_sandbox(sandbox_id)
            except Exception as exc:
                problems.append(f"stop/remove_sandbox({sandbox_id}): {exc!r}")
        if problems:
            raise AssertionError("cleanup failed: " + "; ".join(problems))


def _assert_kept(given: Mapping[str, str], returned: Mapping[str, str], what: str) -> None:
    """Every given key comes back with its value (an adapter may add keys of its own)."""
    for key, value in given.items():
        got = returned.get(key)
        assert got == value, f"{what}: {key}={value!r} came back as {got!r}"


def _assert_sandbox_matches(sandbox: RuntimeSandbox, config: SandboxConfig) -> None:
    assert (sandbox.name, sandbox.namespace, sandbox.uid, sandbox.attempt) == (
        config.name,
        config.namespace,
        config.uid,
        config.attempt,
    )
    _assert_kept(config.labels, sandbox.labels, "sandbox labels")
    _assert_kept(config.annotations, sandbox.annotations, "sandbox annotations")


def _assert_container_matches(
    container: RuntimeContainer, config: ContainerConfig, sandbox_id: str
) -> None:
    assert (container.name, container.attempt, container.sandbox_id) == (
        config.name,
        config.attempt,
        sandbox_id,
    )
    assert config.image.split(":")[0].rsplit("/", 1)[-1] in container.image
    _assert_kept(config.labels, container.labels, "container labels")
    _assert_kept(config.annotations, container.annotations, "container annotations")


def _assert_adopted(
    before: RuntimeSnapshot, after: RuntimeSnapshot, sandboxes: set[str], containers: set[str]
) -> None:
    """The objects a new instance shows are the earlier instance's: same ids, names, states,
    labels and annotations."""
    seen_sandboxes = {s.id: s for s in after.sandboxes}
    for old in (s for s in before.sandboxes if s.id in sandboxes):
        new = seen_sandboxes.get(old.id)
        assert new is not None, f"sandbox {old.id} ({old.name}) is not seen by the new instance"
        assert (new.name, new.namespace, new.uid, new.attempt, new.state) == (
            old.name,
            old.namespace,
            old.uid,
            old.attempt,
            old.state,
        )
        _assert_kept(old.labels, new.labels, "adopted sandbox labels")
        _assert_kept(old.annotations, new.annotations, "adopted sandbox annotations")
    seen_containers = {c.id: c for c in after.containers}
    for old_c in (c for c in before.containers if c.id in containers):
        new_c = seen_containers.get(old_c.id)
        assert new_c is not None, f"container {old_c.id} ({old_c.name}) is not seen anew"
        assert (new_c.name, new_c.sandbox_id, new_c.attempt, new_c.state, new_c.exit_code) == (
            old_c.name,
            old_c.sandbox_id,
            old_c.attempt,
            old_c.state,
            old_c.exit_code,
        )
        _assert_kept(old_c.labels, new_c.labels, "adopted container labels")
        _assert_kept(old_c.annotations, new_c.annotations, "adopted container annotations")


class _Follower:
    """Reads a followed log in a thread of its own (a daemon: a hung stream cannot hang the
    suite), so a check can watch it block and stream."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines
        self._seen: list[bytes] = []
        self._lock = threading.Condition()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, name="conformance-follow", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self._lines:
                with self._lock:
                    self._seen.append(line)
                    self._lock.notify_all()
        except BaseException as error:  # reported by the check, with what it was
            self.error = error

    def saw(self, text: bytes, grace: float = 0.05) -> bool:
        """Whether a line with ``text`` was read, waiting up to ``grace`` real seconds for it
        (the reader thread needs real time to run, even while a ``ManualClock`` races ahead)."""
        with self._lock:
            return self._lock.wait_for(lambda: any(text in line for line in self._seen), grace)

    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float) -> None:
        """Wait (in real time) for the stream to end; fail if it does not."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"logs(follow=True) still runs after {timeout} s"


def _call_within(call: Callable[[], object], timeout: float, what: str) -> object:
    """What ``call`` returns or raises, run in a daemon thread: fail if it takes longer than
    ``timeout`` real seconds."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=run, name="conformance-call", daemon=True)
    worker.start()
    worker.join(timeout)
    assert outcome, f"{what} still runs after {timeout} s"
    return outcome[0]


def _stamp(line: bytes) -> float:
    """The time of a ``timestamps=True`` log line (an RFC 3339 prefix, any fraction digits)."""
    match = RFC3339_STAMP.match(line)
    assert match, line
    whole, fraction, zone = match.groups()
    moment = datetime.fromisoformat(whole.decode() + zone.decode().replace("Z", "+00:00"))
    return moment.timestamp() + float(b"0" + (fraction or b""))


@attrs.frozen
class _SecurityCase:
    field: str
    """The ``LinuxContainerSecurityContext`` field a refusal must name."""
    context: LinuxContainerSecurityContext
    applied: Callable[[SecurityReport], bool]
    what: str


CAP_NET_ADMIN = 1 << 12
_LCSC = LinuxContainerSecurityContext
SECURITY_CASES = (
    _SecurityCase("run_as_user", _LCSC(run_as_user=1234), lambda r: r.uid == 1234, "uid 1234"),
    _SecurityCase(
        "run_as_group",
        _LCSC(run_as_user=1234, run_as_group=2345),
        lambda r: (r.uid, r.gid) == (1234, 2345),
        "uid 1234, gid 2345",
    ),
    _SecurityCase(
        "supplemental_groups",
        _LCSC(run_as_user=1234, supplemental_groups=(3456, 4567)),
        lambda r: {3456, 4567} <= r.groups,
        "groups 3456 and 4567",
    ),
    _SecurityCase(
        "supplemental_groups_policy",
        _LCSC(
            run_as_user=1234,
            run_as_group=2345,
            supplemental_groups=(3456,),
            supplemental_groups_policy="Strict",
        ),
        lambda r: r.groups == {2345, 3456},
        "exactly groups 2345 and 3456",
    ),
    _SecurityCase(
        "capabilities",
        _LCSC(capabilities=Capability(drop_capabilities=("ALL",))),
        lambda r: r.cap_eff == 0,
        "no capabilities",
    ),
    _SecurityCase(
        "capabilities",
        _LCSC(capabilities=Capability(("NET_ADMIN",), ("ALL",))),
        lambda r: r.cap_eff == CAP_NET_ADMIN,
        "only CAP_NET_ADMIN",
    ),
    _SecurityCase(
        "readonly_rootfs", _LCSC(readonly_rootfs=True), lambda r: r.read_only_root, "ro root"
    ),
    _SecurityCase(
        "no_new_privs", _LCSC(no_new_privs=True), lambda r: r.no_new_privs, "NoNewPrivs: 1"
    ),
    _SecurityCase(
        "seccomp",
        _LCSC(seccomp=SecurityProfile(ProfileType.UNCONFINED)),
        lambda r: r.seccomp_mode == 0,
        "Seccomp: 0",
    ),
    _SecurityCase(
        "seccomp",
        _LCSC(seccomp=SecurityProfile(ProfileType.RUNTIME_DEFAULT)),
        lambda r: r.seccomp_mode == 2,
        "Seccomp: 2",
    ),
    _SecurityCase(
        "apparmor",
        _LCSC(apparmor=SecurityProfile(ProfileType.UNCONFINED)),
        lambda r: r.label.startswith("unconfined"),
        "the unconfined AppArmor label",
    ),
    _SecurityCase(
        "selinux_options",
        _LCSC(selinux_options=SELinuxOption(level="s0:c123,c456")),
        lambda r: r.label.endswith("s0:c123,c456"),
        "the SELinux level s0:c123,c456",
    ),
)
SANDBOX_PORT_RANGE = "1100 60999"


class RuntimeConformance:
    """Subclass as ``TestSomething`` and provide the ``bundle`` and ``workloads`` fixtures."""

    STOP_TIMEOUT = 10.0

    # -- fixtures a plugin provides or may override -----------------------------------------

    @pytest.fixture
    def bundle(self) -> RuntimeBundle:
        pytest.fail(
            "RuntimeConformance needs a `bundle` fixture returning the RuntimeBundle under test",
            pytrace=False,
        )

    @pytest.fixture
    def workloads(self) -> Workloads:
        pytest.fail(
            "RuntimeConformance needs a `workloads` fixture (see busybox_workloads)",
            pytrace=False,
        )

    @pytest.fixture
    def clock(self) -> Clock:
        return SystemClock()

    @pytest.fixture
    def unmanaged_container(self) -> Callable[[], str] | None:
        return None

    @pytest.fixture
    def reopen(self) -> Callable[[], RuntimeBundle] | None:
        return None

    @pytest.fixture
    def observe_security(self) -> Callable[[Harness, str], SecurityReport | None] | None:
        """Reads a running container's ``SecurityReport`` (None: not yet); the default (None)
        reads what the ``report_security`` workload printed."""
        return None

    @pytest.fixture
    def harness(
        self,
        bundle: RuntimeBundle,
        workloads: Workloads,
        clock: Clock,
        reopen: Callable[[], RuntimeBundle] | None,
    ) -> Iterator[Harness]:
        # ``reopen`` is set up first so that what it opened is closed after the cleanup.
        harness = Harness(bundle, workloads, clock)
        harness.ensure_image(workloads.image)
        yield harness
        harness.cleanup()

    # -- version --------------------------------------------------------------------------------

    def test_version(self, harness: Harness) -> None:
        version = harness.runtime.version()
        assert version.runtime_name and version.runtime_version

    # -- sandboxes -----------------------------------------------------------------------------

    def test_sandbox_lifecycle(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox_id, config = harness.run_sandbox()
        status = rt.sandbox_status(sandbox_id)
        assert status.id == sandbox_id
        assert status.state is SandboxState.READY
        assert status.ip, "a sandbox without host networking has an IP"
        assert status.created_at > 0
        _assert_sandbox_matches(status, config)
        listed = {s.id: s for s in rt.list_sandboxes()}
        assert sandbox_id in listed
        _assert_sandbox_matches(listed[sandbox_id], config)

        rt.stop_sandbox(sandbox_id)
        assert rt.sandbox_status(sandbox_id).state is SandboxState.NOTREADY
        rt.stop_sandbox(sandbox_id)
        _assert_sandbox_matches(rt.sandbox_status(sandbox_id), config)

        rt.remove_sandbox(sandbox_id)
        assert sandbox_id not in {s.id for s in rt.list_sandboxes()}
        with pytest.raises(SandboxNotFound):
            rt.sandbox_status(sandbox_id)
        rt.remove_sandbox(sandbox_id)
        rt.stop_sandbox(sandbox_id)

    def test_remove_a_ready_sandbox(self, harness: Harness) -> None:
        sandbox_id, _ = harness.run_sandbox()
        harness.runtime.remove_sandbox(sandbox_id)
        with pytest.raises(SandboxNotFound):
            harness.runtime.sandbox_status(sandbox_id)

    def test_sandbox_attempts_are_kept(self, harness: Harness) -> None:
        config = harness.sandbox_config(attempt=3)
        sandbox_id, _ = harness.run_sandbox(config)
        assert harness.runtime.sandbox_status(sandbox_id).attempt == 3

    def test_missing_sandbox(self, harness: Harness) -> None:
        rt = harness.runtime
        rt.stop_sandbox(MISSING_ID)
        rt.remove_sandbox(MISSING_ID)
        with pytest.raises(SandboxNotFound):
            rt.sandbox_status(MISSING_ID)
        config = harness.sandbox_config()
        with pytest.raises(SandboxNotFound):
            rt.create_container(
                MISSING_ID,
                harness.container_config(config, harness.workloads.run_forever),
                config,
            )

    # -- containers ----------------------------------------------------------------------------

    def test_container_lifecycle(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        config = harness.container_config(sandbox[1], harness.workloads.run_forever)
        container_id = rt.create_container(sandbox[0], config, sandbox[1])
        harness.containers.append(container_id)

        created = rt.container_status(container_id)
        assert created.id == container_id
        assert created.state is RuntimeState.CREATED
        assert created.created_at > 0
        assert created.exit_code is None or created.exit_code == 0
        _assert_container_matches(created, config, sandbox[0])

        rt.start_container(container_id)
        running = harness.wait_state(container_id, RuntimeState.RUNNING)
        assert running.started_at is not None
        listed = {c.id: c for c in rt.list_containers()}
        assert listed[container_id].state is RuntimeState.RUNNING
        _assert_container_matches(listed[container_id], config, sandbox[0])

        rt.stop_container(container_id, self.STOP_TIMEOUT)
        stopped = rt.container_status(container_id)
        assert stopped.state is RuntimeState.EXITED
        assert stopped.exit_code == 0, "run_forever exits 0 on TERM"
        assert stopped.finished_at is not None
        _assert_container_matches(stopped, config, sandbox[0])
        rt.stop_container(container_id, self.STOP_TIMEOUT)

        rt.remove_container(container_id)
        assert container_id not in {c.id for c in rt.list_containers()}
        with pytest.raises(ContainerNotFound):
            rt.container_status(container_id)
        rt.remove_container(container_id)
        rt.stop_container(container_id, self.STOP_TIMEOUT)

    def test_a_memory_backed_mount_is_a_sized_tmpfs_or_refused(
        self, harness: Harness, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """An emptyDir of medium Memory: a tmpfs of the asked size and root mode, or
        ``InvalidConfig`` at creation; never a plain directory in its place."""
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        host = tmp_path_factory.mktemp("memory-volume")
        mount = Mount(
            str(host), "/kc-memory", memory_backed=True, size_limit_bytes=8 * MiB, mode=0o1770
        )
        config = attrs.evolve(
            harness.container_config(sandbox[1], harness.workloads.run_forever),
            mounts=(mount,),
        )
        try:
            container_id = rt.create_container(sandbox[0], config, sandbox[1])
        except InvalidConfig:
            return
        harness.containers.append(container_id)
        rt.start_container(container_id)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        show = harness.workloads.show_mounts
        if show is None:
            return
        table = rt.exec_sync(container_id, list(show), 10).stdout.decode()
        lines = [line.split() for line in table.splitlines()]
        (fields,) = [f for f in lines if f[1:2] == ["/kc-memory"]] or [["missing"]]
        assert fields[2:3] == ["tmpfs"], table
        assert {"size=8192k", "mode=1770"} <= set(fields[3].split(",")), table

    @pytest.mark.parametrize("mode", [NamespaceMode.POD, NamespaceMode.CONTAINER])
    def test_pid_namespace_mode_is_applied_or_refused(
        self, harness: Harness, mode: NamespaceMode
    ) -> None:
        """``namespace_options.pid`` POD (shareProcessNamespace): a container sees its pod
        mates' processes; CONTAINER: it does not. A runtime that cannot share refuses the
        container (a ``ContainerRuntimeError``), never runs it unshared."""
        ps = harness.workloads.list_processes
        if ps is None:
            pytest.skip("the workloads name no command that lists processes")
        config = attrs.evolve(harness.sandbox_config(), namespace_options=NamespaceOption(pid=mode))
        sandbox = harness.run_sandbox(config)
        marker = f"pid-marker-{uuid.uuid4().hex[:8]}"
        harness.start(sandbox, harness.workloads.print_and_run(marker))
        try:
            looker = harness.start(sandbox, harness.workloads.run_forever)
        except ContainerRuntimeError:
            if mode is NamespaceMode.POD:
                return  # refused clearly
            raise
        harness.wait_state(looker, RuntimeState.RUNNING)
        result = harness.runtime.exec_sync(looker, list(ps), self.STOP_TIMEOUT * 5)
        assert result.exit_code == 0, result
        seen = marker.encode() in result.stdout
        assert seen is (mode is NamespaceMode.POD), result.stdout.decode(errors="replace")

    def test_stdin_and_tty_are_applied_or_refused(self, harness: Harness) -> None:
        """A runtime that cannot give a container stdin or a terminal refuses it, naming the
        field; one that can runs it (what it applied is checked per runtime)."""
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        plain = harness.container_config(sandbox[1], harness.workloads.run_forever)
        config = attrs.evolve(plain, stdin=True, stdin_once=True, tty=True)
        try:
            container_id = rt.create_container(sandbox[0], config, sandbox[1])
        except InvalidConfig as refusal:
            assert re.search(r"stdin|tty", str(refusal)), f"the refusal names no field: {refusal}"
            return
        harness.containers.append(container_id)
        rt.start_container(container_id)
        harness.wait_state(container_id, RuntimeState.RUNNING)

    def test_a_stop_signal_is_applied_or_refused(self, harness: Harness) -> None:
        """A runtime that cannot stop a container with another signal than TERM refuses a
        ``stop_signal``, naming it; one that can stops the container (its own check proves the
        signal)."""
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        plain = harness.container_config(sandbox[1], harness.workloads.run_forever)
        config = attrs.evolve(plain, stop_signal="SIGINT")
        try:
            container_id = rt.create_container(sandbox[0], config, sandbox[1])
        except InvalidConfig as refusal:
            assert "stop_signal" in str(refusal), f"the refusal names no field: {refusal}"
            return
        harness.containers.append(container_id)
        rt.start_container(container_id)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        rt.stop_container(container_id, self.STOP_TIMEOUT)
        assert rt.container_status(container_id).state is RuntimeState.EXITED

    def test_stop_a_created_container(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.create(sandbox, harness.workloads.run_forever)
        harness.runtime.stop_container(container_id, self.STOP_TIMEOUT)
        state = harness.runtime.container_status(container_id).state
        assert state in (RuntimeState.CREATED, RuntimeState.EXITED)

    @pytest.mark.parametrize("state", ["created", "running", "exited"])
    def test_remove_in_every_state(self, harness: Harness, state: str) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        container_id = harness.create(sandbox, harness.workloads.run_forever)
        if state != "created":
            rt.start_container(container_id)
            harness.wait_state(container_id, RuntimeState.RUNNING)
        if state == "exited":
            rt.stop_container(container_id, self.STOP_TIMEOUT)
        rt.remove_container(container_id)
        with pytest.raises(ContainerNotFound):
            rt.container_status(container_id)
        assert container_id not in {c.id for c in rt.snapshot().containers}

    def test_missing_container(self, harness: Harness) -> None:
        rt = harness.runtime
        rt.stop_container(MISSING_ID, 1)
        rt.remove_container(MISSING_ID)
        with pytest.raises(ContainerNotFound):
            rt.container_status(MISSING_ID)
        with pytest.raises(ContainerNotFound):
            rt.start_container(MISSING_ID)
        with pytest.raises(ContainerNotFound):
            rt.exec_sync(MISSING_ID, list(harness.workloads.exit_with(0)), 5)
        with pytest.raises(ContainerNotFound):
            list(rt.logs(MISSING_ID))

    def test_create_with_a_missing_image(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        with pytest.raises(ImageNotFound):
            harness.create(
                sandbox, harness.workloads.run_forever, image=harness.workloads.absent_image
            )

    def test_start_in_a_stopped_sandbox_says_the_sandbox_is_unusable(
        self, harness: Harness
    ) -> None:
        """The agent re-creates a sandbox on ``SandboxUnusable`` (see ``start_container``)."""
        sandbox = harness.run_sandbox()
        container_id = harness.create(sandbox, harness.workloads.run_forever)
        harness.runtime.stop_sandbox(sandbox[0])
        with pytest.raises(SandboxUnusable):
            harness.runtime.start_container(container_id)

    @pytest.mark.parametrize("code", [0, 1, 3])
    def test_exit_codes(self, harness: Harness, code: int) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.exit_with(code))
        exited = harness.wait_state(container_id, RuntimeState.EXITED)
        assert exited.exit_code == code
        assert exited.finished_at is not None and exited.started_at is not None
        # Docker may stamp a quick exit a fraction of a second before its start.
        assert exited.finished_at >= exited.started_at - 1.0

    def test_oom(self, harness: Harness) -> None:
        command = harness.workloads.consume_memory
        if command is None:
            pytest.skip("the workloads have no consume_memory command")
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, command, memory_limit=harness.workloads.memory_limit)
        exited = harness.wait_state(container_id, RuntimeState.EXITED)
        assert exited.reason == "OOMKilled"
        assert exited.exit_code == 137

    def test_several_containers_share_a_sandbox(self, harness: Harness) -> None:
        rt = harness.runtime
        w = harness.workloads
        sandbox = harness.run_sandbox()
        first = harness.start(sandbox, w.run_forever, name="first")
        second = harness.start(sandbox, w.run_forever, name="second")
        for container_id in (first, second):
            harness.wait_state(container_id, RuntimeState.RUNNING)
        mine = [c for c in rt.list_containers() if c.sandbox_id == sandbox[0]]
        assert sorted(c.name for c in mine) == ["first", "second"]
        if w.serve_tcp is None or w.check_tcp is None:
            return
        check_tcp = w.check_tcp
        server = harness.start(sandbox, w.serve_tcp(w.tcp_port), name="server")
        harness.wait_state(server, RuntimeState.RUNNING)
        harness.wait(
            lambda: rt.exec_sync(first, list(check_tcp(w.tcp_port)), 5).exit_code == 0,
            f"a sibling container to reach 127.0.0.1:{w.tcp_port} inside the sandbox",
        )
        closed = rt.exec_sync(first, list(check_tcp(w.tcp_port + 1)), 5)
        assert closed.exit_code != 0
        rt.stop_container(server, self.STOP_TIMEOUT)
        assert rt.container_status(server).exit_code == 0

    # -- labels and snapshots ------------------------------------------------------------------

    def test_snapshot_agrees_with_the_lists(self, harness: Harness) -> None:
        rt = harness.runtime
        ready = harness.run_sandbox()
        stopped = harness.run_sandbox()
        running = harness.start(ready, harness.workloads.run_forever)
        created = harness.create(ready, harness.workloads.run_forever)
        harness.wait_state(running, RuntimeState.RUNNING)
        rt.stop_sandbox(stopped[0])
        snapshot = rt.snapshot()
        sandboxes = {s.id: s for s in snapshot.sandboxes}
        containers = {c.id: c for c in snapshot.containers}
        assert sandboxes[ready[0]].state is SandboxState.READY
        assert sandboxes[stopped[0]].state is SandboxState.NOTREADY
        _assert_sandbox_matches(sandboxes[ready[0]], ready[1])
        assert containers[running].state is RuntimeState.RUNNING
        assert containers[created].state is RuntimeState.CREATED
        listed = {c.id: c for c in rt.list_containers()}
        for container_id in (running, created):
            assert listed[container_id].state is containers[container_id].state
            assert dict(listed[container_id].labels) == dict(containers[container_id].labels)
            assert dict(listed[container_id].annotations) == dict(
                containers[container_id].annotations
            )
        assert {s.id for s in rt.list_sandboxes()} >= {ready[0], stopped[0]}

    def test_snapshot_shows_only_managed_objects(
        self, harness: Harness, unmanaged_container: Callable[[], str] | None
    ) -> None:
        if unmanaged_container is None:
            pytest.skip("no unmanaged_container fixture")
        foreign = unmanaged_container()
        sandbox = harness.run_sandbox()
        ours = harness.start(sandbox, harness.workloads.run_forever)
        snapshot = harness.runtime.snapshot()
        ids = {c.id for c in snapshot.containers} | {s.id for s in snapshot.sandboxes}
        assert ours in ids
        assert foreign not in ids
        assert foreign not in {c.id for c in harness.runtime.list_containers()}
        assert foreign not in {s.id for s in harness.runtime.list_sandboxes()}

    # -- node leases (optional: NodeClaims) ----------------------------------------------------

    def test_node_claims_are_exclusive_renewable_and_lapse(self, harness: Harness) -> None:
        rt = harness.runtime
        if not isinstance(rt, NodeClaims):
            pytest.skip("the runtime holds no node leases (NodeClaims is optional)")
        node = f"{harness.prefix}-node"
        first = NodeHolder(f"{harness.prefix}-a", "host-a", 101, "pid:[1]")
        second = NodeHolder(f"{harness.prefix}-b", "host-b", 202, "pid:[2]")
        try:
            took = rt.claim_node(node, first, 60.0)
            assert took.granted and took.replaced is None
            assert took.lease.holder == first and took.lease.ttl == 60.0
            refused = rt.claim_node(node, second, 60.0)
            assert not refused.granted, "a live lease of another holder is refused"
            assert refused.lease.holder == first, "a refusal names the holder, every field"
            assert abs(refused.lease.renewed_at - took.lease.renewed_at) < 5.0
            assert rt.claim_node(node, first, 60.0).granted, "the holder renews its own lease"
            rt.release_node(node, second)
            assert not rt.claim_node(node, second, 60.0).granted, "release by another holder"
            rt.release_node(node, first)
            rt.release_node(node, first)  # idempotent
            assert rt.claim_node(node, second, 60.0).granted, "a released lease is free"
            replaced = rt.claim_node(node, first, 60.0, replace=second.id)
            assert replaced.granted and replaced.replaced is not None
            assert replaced.replaced.holder == second, "replace takes over the holder named"
            rt.release_node(node, first)
            assert rt.claim_node(node, second, 0.5).granted
            harness.clock.sleep(1.5)
            lapsed = rt.claim_node(node, first, 60.0)
            assert lapsed.granted, "a lease not renewed within its ttl is taken over"
            assert lapsed.replaced is not None and lapsed.replaced.holder == second
            assert not rt.claim_node(node, second, 60.0).granted
        finally:
            rt.release_node(node, first)
            rt.release_node(node, second)
        assert rt.claim_node(node, second, 60.0).granted, "nothing is left after the releases"
        rt.release_node(node, second)

    # -- exec and logs -------------------------------------------------------------------------

    def test_exec_sync(self, harness: Harness) -> None:
        rt = harness.runtime
        w = harness.workloads
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, w.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        result = rt.exec_sync(container_id, list(w.echo("hello-exec")), 10)
        assert result.exit_code == 0
        assert b"hello-exec" in result.stdout
        assert rt.exec_sync(container_id, list(w.exit_with(0)), 10).exit_code == 0
        assert rt.exec_sync(container_id, list(w.exit_with(3)), 10).exit_code == 3

    def test_exec_sync_timeout(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        started = harness.clock.monotonic()
        with pytest.raises(RuntimeTimeout):
            harness.runtime.exec_sync(container_id, list(harness.workloads.sleep(30)), 1)
        assert harness.clock.monotonic() - started < 20

    def test_exec_in_a_stopped_container_fails(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        harness.runtime.stop_container(container_id, self.STOP_TIMEOUT)
        with pytest.raises(ContainerRuntimeError):
            harness.runtime.exec_sync(container_id, list(harness.workloads.exit_with(0)), 5)

    def test_logs(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.print_and_run("hello-logs"))
        lines = harness.wait_logs(container_id, "hello-logs")
        assert all(line.endswith(b"\n") for line in lines)
        assert list(rt.logs(container_id, tail=1)) == lines[-1:]
        stamped = list(rt.logs(container_id, timestamps=True))
        assert len(stamped) == len(lines)
        for line in stamped:
            assert RFC3339_PREFIX.match(line), line
        assert [RFC3339_PREFIX.sub(b"", line) for line in stamped] == lines

    def test_logs_follow_ends_with_the_container(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.print_and_run("hello-follow"))
        harness.wait_logs(container_id, "hello-follow")
        rt.stop_container(container_id, self.STOP_TIMEOUT)
        followed = list(rt.logs(container_id, follow=True))
        assert any(b"hello-follow" in line for line in followed)

    def test_logs_follow_blocks_and_streams_new_output(self, harness: Harness) -> None:
        rt = harness.runtime
        w = harness.workloads
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, w.print_twice("follow-one", "follow-two", 2))
        harness.wait_logs(container_id, "follow-one")
        follower = _Follower(rt.logs(container_id, follow=True))
        harness.wait(lambda: follower.saw(b"follow-one"), "the first line, followed")
        assert follower.running(), "logs(follow=True) ended while the container runs"
        harness.wait(lambda: follower.saw(b"follow-two"), "a line printed later, followed")
        assert follower.running(), "logs(follow=True) ended while the container runs"
        rt.stop_container(container_id, self.STOP_TIMEOUT)
        follower.join(w.timeout)
        assert follower.error is None, f"logs(follow=True) raised {follower.error!r}"

    def test_logs_since(self, harness: Harness) -> None:
        rt = harness.runtime
        sandbox = harness.run_sandbox()
        container_id = harness.start(
            sandbox, harness.workloads.print_twice("since-one", "since-two", 2)
        )
        harness.wait_logs(container_id, "since-two")
        stamped = list(rt.logs(container_id, timestamps=True))
        first = next(_stamp(line) for line in stamped if b"since-one" in line)
        second = next(_stamp(line) for line in stamped if b"since-two" in line)
        assert second - first >= 1.0, "the second line is printed 2 s after the first"
        later = list(rt.logs(container_id, since=(first + second) / 2))
        assert any(b"since-two" in line for line in later), later
        assert not any(b"since-one" in line for line in later), later
        everything = list(rt.logs(container_id, since=first - 1))
        assert [line for line in everything if b"since-" in line] == [
            b"since-one\n",
            b"since-two\n",
        ]

    def test_calls_after_close_fail_cleanly(
        self, harness: Harness, reopen: Callable[[], RuntimeBundle] | None
    ) -> None:
        """Every call on a closed runtime raises a kubecore error, promptly."""
        rt = harness.runtime
        w = harness.workloads
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, w.print_and_run("before-close"))
        harness.wait_logs(container_id, "before-close")
        fresh = harness.sandbox_config()
        container = harness.container_config(sandbox[1], w.run_forever)
        rt.close()
        calls: dict[str, Callable[[], object]] = {
            "version": rt.version,
            "snapshot": rt.snapshot,
            "list_sandboxes": rt.list_sandboxes,
            "list_containers": rt.list_containers,
            "sandbox_status": lambda: rt.sandbox_status(sandbox[0]),
            "container_status": lambda: rt.container_status(container_id),
            "run_sandbox": lambda: rt.run_sandbox(fresh),
            "create_container": lambda: rt.create_container(sandbox[0], container, sandbox[1]),
            "start_container": lambda: rt.start_container(container_id),
            "exec_sync": lambda: rt.exec_sync(container_id, list(w.exit_with(0)), 5),
            "logs": lambda: list(rt.logs(container_id)),
            "logs(follow=True)": lambda: next(iter(rt.logs(container_id, follow=True))),
            "stop_container": lambda: rt.stop_container(container_id, 1),
            "remove_container": lambda: rt.remove_container(container_id),
            "stop_sandbox": lambda: rt.stop_sandbox(sandbox[0]),
            "remove_sandbox": lambda: rt.remove_sandbox(sandbox[0]),
        }
        for name, call in calls.items():
            outcome = _call_within(call, w.timeout, f"{name} after close()")
            assert isinstance(outcome, ContainerRuntimeError), (
                f"{name} after close() gave {outcome!r}, not a kubecore ContainerRuntimeError"
            )
        rt.close()  # closing twice is harmless
        replacement = reopen() if reopen is not None else None
        if replacement is not None and replacement.runtime is not rt:
            harness.use(replacement)
        else:
            harness.abandon()

    # -- images --------------------------------------------------------------------------------

    def test_image_status_and_list(self, harness: Harness) -> None:
        image = harness.puller.image_status(harness.workloads.image)
        assert image is not None and image.id
        assert image.id in {i.id for i in harness.puller.list_images()}
        usage = harness.puller.image_fs_usage()
        if usage is not None:
            assert usage.used_bytes >= 0
            assert usage.capacity_bytes == 0 or usage.used_bytes <= usage.capacity_bytes
        assert harness.puller.image_status(harness.workloads.absent_image) is None

    def test_pull_of_a_missing_image_fails(self, harness: Harness) -> None:
        with pytest.raises(ImagePullError):
            harness.puller.pull(harness.workloads.absent_image)

    def test_pull_use_and_remove_an_image(self, harness: Harness) -> None:
        reference = harness.workloads.pullable_image
        if reference is None:
            pytest.skip("the workloads have no pullable_image")
        puller = harness.puller
        image_id = puller.pull(reference)
        assert image_id
        status = puller.image_status(reference)
        assert status is not None and status.id == image_id
        assert image_id in {i.id for i in puller.list_images()}

        sandbox = harness.run_sandbox()
        container_id = harness.create(sandbox, harness.workloads.run_forever, image=reference)
        # Removing one of several tags only untags (as Docker does); by id it must refuse.
        with pytest.raises(Conflict):
            puller.remove_image(reference if len(status.tags) <= 1 else image_id)
        harness.runtime.remove_container(container_id)

        puller.remove_image(reference)
        assert puller.image_status(reference) is None
        puller.remove_image(reference)

    # -- events and stats ----------------------------------------------------------------------

    def test_events_for_start_and_death(self, harness: Harness) -> None:
        rt = harness.runtime
        events: list[RuntimeEvent] = []
        lock = threading.Lock()

        def record(event: RuntimeEvent) -> None:
            with lock:
                events.append(event)

        subscription = rt.watch_events(record)
        if subscription is None:
            pytest.skip("the runtime has no event stream")
        try:
            sandbox = harness.run_sandbox()
            running = harness.start(sandbox, harness.workloads.run_forever, name="events")
            harness.wait_state(running, RuntimeState.RUNNING)

            def seen(kind: RuntimeEventType) -> RuntimeEvent | None:
                with lock:
                    return next(
                        (e for e in events if e.type is kind and e.container_id == running), None
                    )

            started = harness.wait(lambda: seen(RuntimeEventType.STARTED), "a started event")
            assert started.pod_uid == sandbox[1].uid
            assert started.container_name == "events"
            harness.runtime.stop_container(running, self.STOP_TIMEOUT)
            died = harness.wait(lambda: seen(RuntimeEventType.DIED), "a died event")
            assert died.exit_code == 0
            assert died.pod_uid == sandbox[1].uid
        finally:
            subscription.close()

    def test_container_stats(self, harness: Harness) -> None:
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        running = {
            c.id for c in harness.runtime.list_containers() if c.state is RuntimeState.RUNNING
        }
        for stats in harness.runtime.container_stats():
            assert stats.container_id in running
            for figure in (
                stats.cpu_usage_nanos,
                stats.memory_working_set_bytes,
                stats.memory_usage_bytes,
                stats.memory_rss_bytes,
                stats.memory_page_faults,
                stats.memory_major_page_faults,
                stats.writable_layer_used_bytes,
                stats.writable_layer_inodes_used,
                stats.log_used_bytes,
                stats.log_inodes_used,
            ):
                assert figure is None or figure >= 0, stats

    # -- adoption: a restarted agent finds what it started --------------------------------------

    def test_a_new_instance_adopts_what_an_earlier_one_started(
        self, harness: Harness, reopen: Callable[[], RuntimeBundle] | None
    ) -> None:
        if reopen is None:
            if not harness.bundle.adopts:
                pytest.skip(
                    f"the {harness.bundle.name or 'runtime'} runtime cannot adopt"
                    " (RuntimeBundle.adopts=False)"
                )
            pytest.skip("no `reopen` fixture: adoption is not checked")
        w = harness.workloads
        first = harness.bundle
        ready = harness.run_sandbox()
        stopped = harness.run_sandbox()
        running = harness.start(ready, w.print_and_run("adopt-me"), name="running")
        created = harness.create(ready, w.run_forever, name="created")
        exited = harness.start(ready, w.exit_with(3), name="exited")
        harness.wait_state(exited, RuntimeState.EXITED)
        harness.wait_logs(running, "adopt-me")
        first.runtime.stop_sandbox(stopped[0])
        before = first.runtime.snapshot()

        second = reopen()
        if second.runtime is not first.runtime:
            first.runtime.close()  # as a stopping agent does: its containers keep running
        harness.use(second)
        rt = second.runtime
        after = rt.snapshot()
        _assert_adopted(before, after, {ready[0], stopped[0]}, {running, created, exited})
        assert rt.container_status(running).state is RuntimeState.RUNNING
        assert rt.sandbox_status(ready[0]).state is SandboxState.READY
        assert any(b"adopt-me" in line for line in rt.logs(running))
        rt.start_container(created)
        harness.wait_state(created, RuntimeState.RUNNING)
        rt.stop_container(running, self.STOP_TIMEOUT)
        stopped_now = rt.container_status(running)
        assert stopped_now.state is RuntimeState.EXITED
        assert stopped_now.exit_code == 0, "run_forever exits 0 on TERM, adopted or not"

    # -- the plugin's own health checker --------------------------------------------------------

    def test_exec_probes(self, harness: Harness) -> None:
        checker = harness.bundle.health_checker
        if checker is None:
            pytest.skip("the bundle uses the core's health checker")
        sandbox = harness.run_sandbox()
        container_id = harness.start(sandbox, harness.workloads.run_forever)
        harness.wait_state(container_id, RuntimeState.RUNNING)
        target = ProbeTarget(container_id, harness.runtime.sandbox_status(sandbox[0]).ip)
        success = Probe(exec=ExecAction(harness.workloads.exit_with(0)), timeout_seconds=10)
        failure = Probe(exec=ExecAction(harness.workloads.exit_with(1)), timeout_seconds=10)
        assert checker.check(success, target).outcome is ProbeOutcome.SUCCESS
        assert checker.check(failure, target).outcome is ProbeOutcome.FAILURE

    # -- security context ------------------------------------------------------------------------

    def _report(
        self,
        harness: Harness,
        container_id: str,
        observe: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> SecurityReport:
        def read() -> SecurityReport | None:
            if observe is not None:
                return observe(harness, container_id)
            return parse_security_report(list(harness.runtime.logs(container_id)))

        return harness.wait(read, f"the security report of {container_id}")

    def _start_secured(
        self,
        harness: Harness,
        sandbox: tuple[str, SandboxConfig],
        context: LinuxContainerSecurityContext | None,
        observe: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> str | ContainerRuntimeError:
        """The running container's id, or the error that refused it."""
        # An observer reads the facts its own way: the container only has to run.
        command = harness.workloads.report_security if observe is None else None
        if command is None and observe is None:
            pytest.skip("the workloads have no report_security and no observe_security is given")
        try:
            container_id = harness.create(
                sandbox, command or harness.workloads.run_forever, security_context=context
            )
            harness.runtime.start_container(container_id)
        except ContainerRuntimeError as error:
            return error
        harness.wait_state(container_id, RuntimeState.RUNNING)
        return container_id

    @pytest.mark.parametrize(
        "case", SECURITY_CASES, ids=[f"{c.field}-{i}" for i, c in enumerate(SECURITY_CASES)]
    )
    def test_security_context_is_applied_or_refused(
        self,
        harness: Harness,
        case: _SecurityCase,
        observe_security: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> None:
        started = self._start_secured(
            harness, harness.run_sandbox(), case.context, observe_security
        )
        if isinstance(started, ContainerRuntimeError):
            assert case.field in str(started), (
                f"refusing {case.field}, the error must name it: {started}"
            )
            return
        report = self._report(harness, started, observe_security)
        assert case.applied(report), f"{case.field} was dropped: wanted {case.what}, saw {report}"

    def test_no_security_context_runs_as_the_image_says(
        self,
        harness: Harness,
        observe_security: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> None:
        started = self._start_secured(harness, harness.run_sandbox(), None, observe_security)
        assert not isinstance(started, ContainerRuntimeError), started
        report = self._report(harness, started, observe_security)
        assert not report.no_new_privs, "no_new_privs was set unasked"

    def test_sandbox_sysctls_are_applied_or_refused(
        self,
        harness: Harness,
        observe_security: Callable[[Harness, str], SecurityReport | None] | None,
    ) -> None:
        config = attrs.evolve(
            harness.sandbox_config(), sysctls={PORT_RANGE_SYSCTL: SANDBOX_PORT_RANGE}
        )
        try:
            sandbox = harness.run_sandbox(config)
        except ContainerRuntimeError as error:
            assert "sysctl" in str(error), f"refusing sysctls, the error must say so: {error}"
            return
        started = self._start_secured(harness, sandbox, None, observe_security)
        assert not isinstance(started, ContainerRuntimeError), started
        report = self._report(harness, started, observe_security)
        assert report.port_range == SANDBOX_PORT_RANGE, f"sysctls were dropped: {report}"

    # -- image names ------------------------------------------------------------------------------

    def test_short_and_qualified_names_are_one_image(self, harness: Harness) -> None:
        """``busybox`` and ``docker.io/library/busybox:latest`` name one image (as on Docker)."""
        puller = harness.puller
        ref = parse_image_ref(harness.workloads.image)
        short, qualified = puller.image_status(ref.familiar()), puller.image_status(ref.canonical())
        assert short is not None and qualified is not None and short.id == qualified.id
        assert [i.id for i in puller.list_images()].count(short.id) == 1

        reference = harness.workloads.pullable_image
        if reference is None:
            return
        pullable = parse_image_ref(reference)
        was_present = puller.image_status(reference) is not None
        image_id = puller.pull(pullable.canonical())
        try:
            found = puller.image_status(pullable.familiar())
            assert found is not None and found.id == image_id
            assert [i.id for i in puller.list_images()].count(image_id) == 1
        finally:
            if not was_present:
                puller.remove_image(pullable.familiar())
        if not was_present:
            assert puller.image_status(pullable.canonical()) is None
