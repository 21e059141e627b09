"""``FakeRuntime``: an in-memory container runtime and image service.

It honours the contract in ``kubecore.runtime`` exactly, so the core can be tested (and
demoed)
without an engine. Everything is deterministic: ids count up (``sandbox-1``, ``container-1``),
time comes from an injected ``Clock``, and with a ``ManualClock`` every timed behaviour (a
container that exits after ``sleep 5``, a grace period, injected latency) happens while a test
calls ``clock.advance`` (or while a call "takes time", which advances it).

Semantics worth knowing:

* Objects created through the runtime API are kubecore's (listed by ``snapshot``/``list_*``);
  ``add_unmanaged_container`` makes objects that only exist "in the engine": they are never
  listed, and any call that targets them is recorded in ``unmanaged_calls``.
* A container's behaviour comes from the most recent matching ``script(...)``, else from a small
  reading of its command (see ``kubecore_fake._shell``): ``sh -c 'echo crashing; exit 1'`` logs
  ``crashing`` and exits 1; ``sleep 5`` exits 0 five (virtual) seconds after it starts; anything
  unknown runs until stopped.
* ``stop_container`` sends TERM, or the config's ``stop_signal`` (recorded in ``signals(id)``,
  as ``TERM``, ``USR1``; it is answered as TERM would be). A behaviour with ``traps_term``
  exits 0 at once; otherwise the call waits the grace period on the clock (a virtual clock
  advances, stopping early if the container exits on its own) and the container is killed
  with exit code 137. Unknown programs trap TERM; shell
  scripts without a ``trap ... TERM`` and a bare ``sleep`` do not (as PID 1 in a real engine).
* Events are delivered synchronously, in the thread that caused the change, after the runtime's
  lock is released. Only managed containers produce events.
* Node leases (``claim_node``) live in the runtime object, timed by its clock: every agent
  handed the same ``FakeRuntime`` shares them, as agents on one engine do; ``node_lease(name)``
  shows one.
* ``exec_stream`` and ``attach`` (``StreamingRuntime``) run a command interactively, or follow
  a running container's output, in threads of their own (``kubecore_fake._streams``).
* Once ``close()`` is called every runtime call raises ``RuntimeUnavailable``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from kubecore.runtime import (
    Clock,
    ContainerConfig,
    ContainerResources,
    ContainerStats,
    ExecResult,
    Image,
    ImageFsUsage,
    NodeClaim,
    NodeHolder,
    NodeLease,
    PullProgress,
    RegistryAuth,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeSandbox,
    RuntimeSnapshot,
    RuntimeState,
    RuntimeUnavailable,
    RuntimeVersion,
    SandboxConfig,
    SystemClock,
    TerminalSize,
)
from kubecore_fake._behaviour import Behaviour
from kubecore_fake._containers import Containers
from kubecore_fake._controls import Call, Controls
from kubecore_fake._engine import Engine
from kubecore_fake._events import EventSubscription
from kubecore_fake._exec import ExecHandler, ExecMatcher, Execs
from kubecore_fake._images import ImageService, sized
from kubecore_fake._leases import NodeLeases
from kubecore_fake._logs import read_logs
from kubecore_fake._ports import PortHandler, Ports
from kubecore_fake._sandboxes import Sandboxes
from kubecore_fake._streams import FakeSession, Streams

MiB = 1024 * 1024
GiB = 1024 * MiB
FAKE_VERSION = "0.1.0"
DEFAULT_SANDBOX_IMAGE = "registry.k8s.io/pause:3.9"


class FakeRuntime:
    """An in-memory ``ContainerRuntime`` and ``Puller``; thread-safe (one lock).

    ``images``: None lets every pull succeed; an iterable of references (or a mapping of
    reference to size in bytes) allows only those. ``pulled`` images are present from the start.
    The call log keeps the last ``max_calls`` calls.

    Each method records the call (``_enter``: the call log, injected latency and failures) and
    hands it to the room that does it: the engine's state (``kubecore_fake._engine``), its
    sandboxes and containers, exec, logs, images, node leases, the test controls.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        images: Iterable[str] | Mapping[str, int] | None = None,
        *,
        pulled: Iterable[str] | Mapping[str, int] = (),
        image_fs_capacity: int = 100 * GiB,
        default_image_size: int = 10 * MiB,
        node_ip: str = "10.88.0.1",
        events: bool = True,
        max_calls: int = 100_000,
    ) -> None:
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._lock = threading.RLock()
        self._images = ImageService(
            self._clock,
            self._lock,
            capacity=image_fs_capacity,
            default_size=default_image_size,
            pullable=None if images is None else set(),
        )
        self._engine = Engine(self._clock, self._lock, self._images, node_ip)
        self._sandboxes = Sandboxes(self._engine)
        self._containers = Containers(self._engine)
        self._execs = Execs(self._engine)
        self._streams = Streams(self._engine, self._execs)
        self._ports = Ports(self._engine)
        self._leases = NodeLeases(self._clock, self._lock)
        self._controls = Controls(self._lock, max_calls)
        self._events_enabled = events
        for ref, size in sized(images or ()):
            self.add_image(ref, size)
        for ref, size in sized(pulled):
            self.add_image(ref, size, pulled=True)

    # == test controls ==========================================================================

    @property
    def clock(self) -> Clock:
        """The clock it runs on (a ``ManualClock`` for virtual time)."""
        return self._clock

    def add_image(
        self,
        ref: str,
        size: int | None = None,
        *,
        pulled: bool = False,
        image_id: str = "",
        user: str = "",
    ) -> str:
        """Make ``ref`` pullable (with ``size`` bytes); ``pulled=True`` also makes it present.
        Returns its image id (``image_id`` lets two references share one image). ``user`` is the
        user the image runs as (Docker's ``USER``: ``1000``, ``nobody``; '' for root)."""
        return self._images.add(ref, size, pulled=pulled, image_id=image_id, user=user)

    def require_auth(self, ref: str, auth: RegistryAuth) -> None:
        """Pulls of ``ref`` succeed only with these credentials (username and password)."""
        self._images.require_auth(ref, auth)

    def set_image_fs_capacity(self, capacity_bytes: int) -> None:
        """Set the size of the fake image store (what ``image_fs_usage`` reports as capacity)."""
        self._images.set_capacity(capacity_bytes)

    def script(
        self,
        image: str | None = None,
        command: str | Sequence[str] | None = None,
        behaviour: Behaviour | None = None,
    ) -> None:
        """Containers created from now on whose image and command match get ``behaviour``.

        ``command`` as a sequence must equal command + args; as a string it must equal them
        joined by spaces, or the script of ``sh -c SCRIPT``. The newest matching script wins.
        """
        if image is None and command is None:
            raise ValueError("script() needs an image, a command, or both")
        cmd: str | tuple[str, ...] | None = (
            command if command is None or isinstance(command, str) else tuple(command)
        )
        with self._lock:
            self._engine.scripts.add(
                image, cmd, behaviour if behaviour is not None else Behaviour()
            )

    def on_exec(
        self,
        matcher: ExecMatcher,
        handler: ExecHandler | ExecResult | int,
        *,
        container: str | None = None,
    ) -> None:
        """Answer matching ``exec_sync`` calls with ``handler`` (a callable, an ``ExecResult``
        or an exit code). ``matcher``: a string (the whole command joined by spaces, or a
        ``sh -c`` script), a sequence (a prefix of the argv) or a predicate on the argv.
        ``container`` limits the rule to one container id or name. The newest rule wins."""
        self._execs.on_exec(matcher, handler, container)

    def exit(
        self, container_id: str, code: int = 0, reason: str | None = None, message: str = ""
    ) -> None:
        """Make a running container exit now (reason derived from the code if not given)."""
        self._containers.exit(container_id, code, reason or "", message)

    def crash(self, container_id: str, code: int = 1, message: str = "") -> None:
        """Make a running container exit now with ``code`` and reason ``Error``."""
        self.exit(container_id, code, "Error", message)

    def oom_kill(self, container_id: str) -> None:
        """Make a running container exit now as the kernel's OOM killer ends it (137,
        ``OOMKilled``)."""
        self._containers.oom_kill(container_id)

    def write_log(self, container_id: str, text: str) -> None:
        """Append output to a container's log (one entry per line)."""
        self._containers.write_log(container_id, text)

    def write_file(self, container_id: str, path: str, content: str | None) -> None:
        """Set (or with None delete) a file that exec ``cat``/``test -e`` will see."""
        self._containers.write_file(container_id, path, content)

    def fail_next(self, op: str, n: int = 1, error: BaseException | None = None) -> None:
        """The next ``n`` calls of ``op`` (or of anything, with ``*``) raise ``error``."""
        self._controls.fail_next(op, n, error)

    def add_latency(self, op: str, seconds: float) -> None:
        """Each call of ``op`` (``*``: every call) first takes ``seconds`` on the clock
        (a ``ManualClock`` advances; a real one sleeps). 0 removes it."""
        self._controls.add_latency(op, seconds)

    def add_unmanaged_container(
        self,
        name: str = "not-kubecore",
        image: str = "unmanaged:latest",
        labels: Mapping[str, str] | None = None,
        *,
        running: bool = True,
    ) -> str:
        """A container kubecore did not create: never listed; calls that target it are kept
        in ``unmanaged_calls``."""
        return self._containers.add_unmanaged(name, image, labels, running=running)

    def add_unmanaged_sandbox(
        self, name: str = "not-kubecore", labels: Mapping[str, str] | None = None
    ) -> str:
        """Add a sandbox that kubecore did not make (without ``MANAGED_LABEL``); returns its id."""
        return self._sandboxes.add_unmanaged(name, labels)

    @property
    def calls(self) -> list[Call]:
        """The runtime calls made so far (the last ``max_calls``): (operation, arguments)."""
        return self._controls.calls()

    def call_count(self, op: str) -> int:
        """How many times the operation ``op`` (one of ``OPERATIONS``) was called."""
        return self._controls.call_count(op)

    @property
    def unmanaged_calls(self) -> list[Call]:
        """Calls that targeted an unmanaged object (kubecore must never make any)."""
        return self._controls.unmanaged_calls()

    def signals(self, container_id: str) -> tuple[str, ...]:
        """Signals sent to the container (``TERM``, ``KILL``), oldest first."""
        return self._containers.signals(container_id)

    def find_containers(
        self,
        name: str | None = None,
        *,
        pod_name: str | None = None,
        pod_uid: str | None = None,
        state: RuntimeState | None = None,
    ) -> list[RuntimeContainer]:
        """Managed containers by container name (the ``CONTAINER_NAME_LABEL`` or config name),
        pod name / UID label and state, oldest first."""
        return self._containers.find(name, pod_name, pod_uid, state)

    def sandbox_config(self, sandbox_id: str) -> SandboxConfig:
        """The ``SandboxConfig`` a sandbox was made with. Raises ``SandboxNotFound``."""
        return self._sandboxes.config(sandbox_id)

    def container_config(self, container_id: str) -> ContainerConfig:
        """The ``ContainerConfig`` a container was made with. Raises ``ContainerNotFound``."""
        return self._containers.config(container_id)

    def container_behaviour(self, container_id: str) -> Behaviour:
        """The ``Behaviour`` a container runs (read from its command or scripted). Raises
        ``ContainerNotFound``."""
        return self._containers.behaviour(container_id)

    def listening_ports(self, sandbox_id: str) -> frozenset[int]:
        """Ports that running containers of the sandbox listen on."""
        with self._lock:
            return self._engine.listening(sandbox_id, None)

    def serve_port(self, port: int, handler: PortHandler) -> None:
        """Answer ``port_forward`` connections to ``port`` with ``handler`` (given the server's
        end of each connection) wherever a running container listens on it; without one, an
        ``httpd`` serves its files and anything else echoes (``kubecore_fake._ports``)."""
        self._ports.serve(port, handler)

    def reads_mounts_in_process(self) -> bool:
        """``InProcessMounts``: a container's files are read through its mounts' host paths by
        this process, so a subPath comes as the path the agent verified, never as a bind."""
        return True

    # == ContainerRuntime =======================================================================

    def version(self) -> RuntimeVersion:
        self._enter("version")
        return RuntimeVersion("fake", FAKE_VERSION, "v1")

    def run_sandbox(self, config: SandboxConfig) -> str:
        self._enter("run_sandbox", config)
        return self._sandboxes.run(config)

    def stop_sandbox(self, sandbox_id: str) -> None:
        self._enter("stop_sandbox", sandbox_id, target=sandbox_id)
        self._sandboxes.stop(sandbox_id)

    def remove_sandbox(self, sandbox_id: str) -> None:
        self._enter("remove_sandbox", sandbox_id, target=sandbox_id)
        self._sandboxes.remove(sandbox_id)

    def list_sandboxes(self) -> list[RuntimeSandbox]:
        self._enter("list_sandboxes")
        with self._lock:
            return list(self._engine.sandboxes_listed())

    def sandbox_status(self, sandbox_id: str) -> RuntimeSandbox:
        self._enter("sandbox_status", sandbox_id, target=sandbox_id)
        return self._sandboxes.status(sandbox_id)

    def create_container(
        self, sandbox_id: str, config: ContainerConfig, sandbox_config: SandboxConfig
    ) -> str:
        self._enter("create_container", sandbox_id, config, sandbox_config, target=sandbox_id)
        return self._containers.create(sandbox_id, config, sandbox_config)

    def start_container(self, container_id: str) -> None:
        self._enter("start_container", container_id, target=container_id)
        self._containers.start(container_id)

    def stop_container(self, container_id: str, timeout: float) -> None:
        self._enter("stop_container", container_id, timeout, target=container_id)
        self._containers.stop(container_id, timeout)

    def update_container_resources(self, container_id: str, resources: ContainerResources) -> None:
        """Resize in place: the container's recorded config takes the new resources."""
        self._enter("update_container_resources", container_id, resources, target=container_id)
        self._containers.update_resources(container_id, resources)

    def remove_container(self, container_id: str) -> None:
        self._enter("remove_container", container_id, target=container_id)
        self._containers.remove(container_id)

    def list_containers(self) -> list[RuntimeContainer]:
        self._enter("list_containers")
        with self._lock:
            return list(self._engine.containers_listed())

    def container_status(self, container_id: str) -> RuntimeContainer:
        self._enter("container_status", container_id, target=container_id)
        return self._containers.status(container_id)

    def snapshot(self) -> RuntimeSnapshot:
        self._enter("snapshot")
        return self._engine.snapshot()

    def exec_sync(self, container_id: str, command: list[str], timeout: float) -> ExecResult:
        """Run ``command`` through the ``on_exec`` rules, else the built-in reading. A timeout
        of 0 or less means none (as in the CRI)."""
        argv = tuple(command)
        self._enter("exec_sync", container_id, argv, timeout, target=container_id)
        return self._execs.run(container_id, argv, timeout)

    def exec_stream(
        self,
        container_id: str,
        command: list[str],
        *,
        stdin: bool,
        tty: bool,
        size: TerminalSize | None = None,
    ) -> FakeSession:
        """Run ``command`` interactively (``kubecore_fake._streams``): the ``on_exec`` rules,
        else the fake's shell reading stdin."""
        argv = tuple(command)
        self._enter("exec_stream", container_id, argv, stdin, tty, target=container_id)
        return self._streams.exec_stream(container_id, argv, stdin=stdin, tty=tty, size=size)

    def attach(self, container_id: str, *, stdin: bool, tty: bool) -> FakeSession:
        """Follow the running container's output from now on, until it stops."""
        self._enter("attach", container_id, stdin, tty, target=container_id)
        return self._streams.attach(container_id, stdin=stdin, tty=tty)

    def port_forward(self, sandbox_id: str, port: int, timeout: float) -> socket.socket:
        """One end of a socket pair whose other end the port's in-memory server answers."""
        self._enter("port_forward", sandbox_id, port, timeout, target=sandbox_id)
        return self._ports.connect(sandbox_id, port)

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        follow: bool = False,
        since: float | None = None,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        """The container's log. ``follow`` blocks (in real time, on a condition) for new lines
        while the container runs: with a ``ManualClock`` make it exit from another thread."""
        self._enter("logs", container_id, target=container_id)
        return read_logs(
            self._engine,
            container_id,
            tail=tail,
            follow=follow,
            since=since,
            timestamps=timestamps,
        )

    def watch_events(self, handler: Callable[[RuntimeEvent], None]) -> EventSubscription | None:
        self._enter("watch_events")
        if not self._events_enabled:
            return None
        return self._engine.hub.subscribe(handler)

    def container_stats(self) -> list[ContainerStats]:
        self._enter("container_stats")
        return self._containers.stats()

    # -- node leases (NodeClaims) -------------------------------------------------------------

    def claim_node(
        self, node_name: str, holder: NodeHolder, ttl: float, *, replace: str = ""
    ) -> NodeClaim:
        """The engine's lease on a node name, in memory (shared by every agent on this runtime,
        timed by its clock)."""
        self._enter("claim_node", node_name, holder, ttl)
        return self._leases.claim(node_name, holder, ttl, replace)

    def release_node(self, node_name: str, holder: NodeHolder) -> None:
        self._enter("release_node", node_name, holder)
        self._leases.release(node_name, holder)

    def node_lease(self, node_name: str) -> NodeLease | None:
        """The lease on ``node_name`` as it stands (a test control), lapsed or not."""
        return self._leases.lease(node_name)

    def close(self) -> None:
        for timer in self._engine.close():
            timer.cancel()

    # == Puller =================================================================================

    def pull(
        self,
        image: str,
        auth: RegistryAuth | None = None,
        progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        self._enter("pull", image)
        return self._images.pull(image, auth, progress)

    def image_status(self, image: str) -> Image | None:
        self._enter("image_status", image)
        return self._images.status(image)

    def list_images(self) -> list[Image]:
        self._enter("list_images")
        return self._images.list_images()

    def remove_image(self, image: str) -> None:
        self._enter("remove_image", image)
        self._images.remove(image, self._engine.image_users)

    def image_fs_usage(self) -> ImageFsUsage:
        self._enter("image_fs_usage")
        return self._images.fs_usage()

    # == the record of every call ===============================================================

    def _enter(self, op: str, *args: object, target: str | None = None) -> None:
        """Record the call, apply injected latency and failures."""
        with self._lock:
            if self._engine.closed:
                raise RuntimeUnavailable(f"{op}: the fake runtime is closed")
            unmanaged = target is not None and self._engine.is_unmanaged(target)
            latency, failure = self._controls.record(op, args, unmanaged=unmanaged)
        if latency > 0:
            self._clock.sleep(latency)
        if failure is not None:
            raise failure
