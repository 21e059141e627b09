"""Housekeeping on timers, off the sync path: ``timers`` (what is due when), ``gc`` (dead
containers, dead sandboxes, unused images), ``local_storage`` (eviction of a pod over its
ephemeral storage) and ``log_rotation`` (containers' log files rotated as the kubelet does)."""
