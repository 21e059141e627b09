"""The pure planner: from a pod's spec, what the runtime shows of it and its history (probe
results, back-offs, ``now``), the ``PodActions`` that bring it to its spec, as the kubelet's
``computePodActions`` without hidden inputs (no I/O, no clock, no threads). ``plan`` holds the
entry point and its cases; ``actions`` the values passed to the executor; the spec side, the
steady state, init containers and sidecars, resizes, when a pod ends, restart rules and back-off
arithmetic each have a module of their own."""
