"""kubecore-process: an example kubecore runtime plugin that runs containers as local processes.

**There is no isolation.** A "container" is an ordinary host process (started by a supervisor
that outlives the agent), running ``command + args`` directly on the host with the agent's user
and privileges, the pod's env vars and working dir. The image name selects nothing: it is only
checked against an allow-list of "local images" (option ``images``, default ``host``). Mounts,
ports, DNS, resource limits and ``privileged`` are ignored; every pod shares the host network and
reports IP 127.0.0.1. Use it to run trusted local commands under kubecore's supervision
(restarts, probes, logs), or as a model for writing a real runtime plugin; never to run anything
you would not run in your own shell.

Installed, it is found through its entry point (group ``kubecore``, name ``process``)::

    import kubecore
    bundle = kubecore.load_runtime("process", images="host", state_dir="/var/lib/kubecore-process")

Its records live in files under ``state_dir``: ``close()`` leaves containers running, and an agent
started again on the same directory adopts them.
"""

from kubecore_process._plugin import create_process_runtime
from kubecore_process._runtime import ProcessPuller, ProcessRuntime

__version__ = "0.1.0"

__all__ = ["ProcessPuller", "ProcessRuntime", "create_process_runtime"]
