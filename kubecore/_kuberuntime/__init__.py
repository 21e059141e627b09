"""The runtime manager: carries a pod's plan out through the container runtime, as upstream's
``kuberuntime`` does. ``execute`` holds the fixed order of a pod's actions; ``sandbox``,
``containers``, ``images``, ``hooks`` and ``kill`` each do one kind of step (the sandbox and
volumes, create and start, pulls and their back-off, postStart and preStop, stopping within a
grace period), and ``pod_events`` records the events they report; ``translate``, ``env``,
``envfile``, ``security`` and ``credentials`` turn the v1 spec into what the runtime is given
(configs, environment, security settings, registry auth)."""
