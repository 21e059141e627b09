"""The pod workers: one sync of a pod at a time, each pod's state changed only by its worker.
``queue`` holds the workers (a bounded pool, one pending request per pod, the newest winning) and
the ``Inbox`` other threads post to; ``room`` holds what a worker does for one pod (plan it on the
observed snapshot, carry the plan out, publish its status, or kill and remove a pod no longer
desired) and the ``PodState`` only that worker writes."""
