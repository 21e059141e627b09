"""Admission of what a pod needs the node to serve: a persistentVolumeClaim needs ``--pvc-dir``
(there is no API server to bind it), a gRPC probe needs the gRPC client installed."""

from __future__ import annotations

from kubecore._model.rejection import Rejection
from kubecore._model.v1 import Pod
from kubecore._prober.health import grpc_unavailable

UNBOUND_CLAIM = "UnboundPersistentVolumeClaim"
GRPC_PROBES_UNAVAILABLE = "GRPCProbesUnavailable"


def claim_rejection(pod: Pod) -> Rejection | None:
    """Without an API server nothing binds a persistentVolumeClaim: a pod using one is refused
    unless the node maps claims to directories (``--pvc-dir``)."""
    for i, volume in enumerate(pod.spec.volumes):
        if volume.persistent_volume_claim is not None:
            claim = volume.persistent_volume_claim.claim_name
            return Rejection(
                UNBOUND_CLAIM,
                f"Pod was rejected: spec.volumes[{i}].persistentVolumeClaim: claim {claim!r}"
                " cannot be bound, there is no API server; give the agent --pvc-dir DIR to"
                " mount DIR/<namespace>/<claimName> for it",
            )
    return None


def grpc_probe_paths(pod: Pod) -> list[str]:
    """The field paths of the pod's gRPC probes."""
    paths = []
    groups = (("initContainers", pod.spec.init_containers), ("containers", pod.spec.containers))
    for group, containers in groups:
        for i, c in enumerate(containers):
            for kind, probe in (
                ("livenessProbe", c.liveness_probe),
                ("readinessProbe", c.readiness_probe),
                ("startupProbe", c.startup_probe),
            ):
                if probe is not None and probe.grpc is not None:
                    paths.append(f"spec.{group}[{i}].{kind}.grpc")
    return paths


def grpc_rejection(pod: Pod) -> Rejection | None:
    """A pod with gRPC probes is refused where the gRPC client is not installed."""
    paths = grpc_probe_paths(pod)
    if not paths:
        return None
    missing = grpc_unavailable()
    if not missing:
        return None
    return Rejection(GRPC_PROBES_UNAVAILABLE, f"Pod was rejected: {paths[0]}: {missing}")
