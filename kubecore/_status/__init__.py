"""The pod's status: ``compute`` derives its v1 ``PodStatus`` from what the runtime shows and the
plan (pure: container states, phase, conditions, IPs) and reads a status back as kubectl and
``kubecore run --once`` do (the STATUS column, a pod's verdict); ``manager`` computes each pod's
status at every sync with its termination messages (from their files, else the log's tail),
reports refused pods, and times how long pods take to start."""
