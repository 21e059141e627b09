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

That is all: every ``test_*`` method of the suite is collected for ``TestMyRuntime``. Fixtures a
plugin may also override:

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

Port forwarding (``PortForwarder``, optional): a connection to the ``serve_tcp`` server in a
sandbox answers HTTP, two run at once, a port nothing listens on is a ``ContainerRuntimeError``
that names it, an unknown sandbox a ``NotFound``.

What a container is given reaches its process: its environment (values unchanged), its
arguments after its command, and its bind mounts (a file on the host is seen; what the container
writes lands on the host; a read-only mount stays unwritten), seen through the ``run_script``
workload.

Checks that need something the runtime may lack are skipped when it is missing: an optional
capability (node leases: ``NodeClaims``, interactive exec and attach: ``StreamingRuntime``, port
forwarding: ``PortForwarder``, an event stream, adoption, a health checker of the plugin's own)
is reported as *not checked*. A check skipped because the test module gave the suite less than
it needs (a workload command such as ``list_processes``, ``run_script``, ``consume_memory``,
``pullable_image``; the ``unmanaged_container`` or ``reopen`` fixture) hides what a runtime
might ignore: in strict mode (``pytest --conformance-strict``, ``KUBECORE_CONFORMANCE_STRICT=1``,
or ``STRICT = True`` on the class) it fails, naming what is missing. At the end of the run the
report (``kubecore conformance: not checked``) lists each capability not checked and each field
the runtime refused instead of applying. The streaming checks run the commands of the
``stream_workloads`` fixture (``StreamWorkloads``: POSIX ``sh`` and ``cat`` by default).

Namespaces: the sandbox's ``namespace_options.pid`` (POD: a container sees its pod mates'
processes; CONTAINER: it does not) and a container's own ``namespace_options`` with ``pid`` TARGET
(an ephemeral container joining its target's process namespace) are each applied, as ``ps`` in
the container shows, or refused clearly (``InvalidConfig`` naming ``namespace_options``).

Security context: for each field of ``LinuxContainerSecurityContext`` (and the sandbox's
``sysctls``) the suite starts a container that has it and requires that the runtime either
refuses the container clearly (a ``ContainerRuntimeError`` from ``create_container`` or
``start_container`` whose message names the field) or applies it, as the container itself sees
it: the ``report_security`` workload prints its identity, capabilities, no-new-privileges,
seccomp mode, whether its root filesystem is writable, its security label and a sysctl. A runtime
that cannot run that workload reads the same facts its own way through the ``observe_security``
fixture (the in-memory ``fake`` reads what it recorded).

Needs pytest: ``pip install kubecore[testing]`` (importing this package without it raises an
``ImportError`` that says so).
"""

from __future__ import annotations

try:
    import pytest as _pytest  # noqa: F401  (the checks are pytest tests, their fixtures pytest's)
except ImportError as missing:
    raise ImportError(
        "kubecore.testing.conformance is a pytest suite, and pytest is not installed: "
        "pip install kubecore[testing]"
    ) from missing

from kubecore.testing.conformance._capabilities import OptionalCapabilityChecks
from kubecore.testing.conformance._configs import ConfigChecks
from kubecore.testing.conformance._containers import ContainerChecks
from kubecore.testing.conformance._exec import ExecChecks
from kubecore.testing.conformance._harness import Harness, wait_for
from kubecore.testing.conformance._images import ImageChecks
from kubecore.testing.conformance._instances import InstanceChecks
from kubecore.testing.conformance._logs import LogChecks
from kubecore.testing.conformance._port_forward import PortForwardChecks
from kubecore.testing.conformance._sandboxes import SandboxChecks
from kubecore.testing.conformance._security import SECURITY_CASES, SecurityChecks
from kubecore.testing.conformance._snapshots import SnapshotChecks
from kubecore.testing.conformance._streams import StreamChecks, StreamWorkloads
from kubecore.testing.conformance._workloads import (
    Command,
    SecurityReport,
    Workloads,
    busybox_workloads,
    parse_security_report,
)

__all__ = [
    "SECURITY_CASES",
    "Command",
    "Harness",
    "RuntimeConformance",
    "SecurityReport",
    "StreamWorkloads",
    "Workloads",
    "busybox_workloads",
    "parse_security_report",
    "wait_for",
]


# pytest collects inherited checks in reverse MRO order: the areas run from the last listed
# (sandboxes) to the first (security).
class RuntimeConformance(
    SecurityChecks,
    StreamChecks,
    PortForwardChecks,
    OptionalCapabilityChecks,
    ImageChecks,
    InstanceChecks,
    LogChecks,
    ExecChecks,
    ConfigChecks,
    SnapshotChecks,
    ContainerChecks,
    SandboxChecks,
):
    """Subclass as ``TestSomething`` and provide the ``bundle`` and ``workloads`` fixtures."""
