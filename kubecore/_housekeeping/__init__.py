"""Housekeeping on timers, off the sync path: ``timers`` (what is due when), ``gc`` (dead
containers, dead sandboxes, unused images), ``eviction`` (the eviction manager: the Node's
pressure conditions and the pods over their local storage limits, from one summary) and
``log_rotation`` (containers' log files rotated as the kubelet does)."""
