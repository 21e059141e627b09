"""Volumes on the node: ``pod_dirs`` (each pod's directory, emptyDir volumes, termination-message
files, orphan teardown), ``sources`` (what each volume source puts there: hostPath checks, the
files of configMap, secret, downwardAPI and projected volumes) and ``atomic_writer`` (a set of
files swapped in so a reader never sees half of it)."""
