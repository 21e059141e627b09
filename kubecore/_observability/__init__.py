"""What the agent tells about itself: ``events`` (the v1 Event builder and the recorders),
``metrics`` (its Prometheus families, the kubelet's names), ``instrumented`` (the runtime and
puller wrappers that count and time every call), ``stats`` (the ``/stats/summary`` document),
``logs`` (container log queries answered as the kubelet answers them), ``cri_log_format`` and
``cri_logs`` (the log files CRI runtimes write, parsed and read for those queries)."""
