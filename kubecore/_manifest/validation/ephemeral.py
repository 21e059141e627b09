"""The rules about a pod's ephemeral containers (``kubectl debug``), as the API server's
validation has them: a container's rules, a name unique among all the pod's containers, a
``targetContainerName`` naming an app or init container, and none of the fields an ephemeral
container may not have (it is no part of the pod's service: no ports, probes, resources,
lifecycle hooks, restart or resize policy, subPath mounts)."""

from __future__ import annotations

from kubecore._contract.errors import FieldError
from kubecore._manifest.decoding import _field, _item, _Problems
from kubecore._manifest.validation.containers import check_container
from kubecore._model import v1 as m

NOT_FOR_EPHEMERAL = "cannot be set for an Ephemeral Container"
"""The API server's message for a field an ephemeral container may not have."""


def forbidden_fields(container: m.EphemeralContainer) -> tuple[str, ...]:
    """The JSON names of the fields set on ``container`` that an ephemeral container may not
    have (in the order of the v1 type)."""
    c = container
    checks = (
        ("ports", bool(c.ports)),
        ("resources", bool(c.resources.requests or c.resources.limits)),
        ("livenessProbe", c.liveness_probe is not None),
        ("readinessProbe", c.readiness_probe is not None),
        ("startupProbe", c.startup_probe is not None),
        ("lifecycle", c.lifecycle is not None),
        ("restartPolicy", c.restart_policy is not None),
        ("restartPolicyRules", bool(c.restart_policy_rules)),
        ("resizePolicy", bool(c.resize_policy)),
    )
    return tuple(name for name, is_set in checks if is_set)


def check_ephemeral_containers(
    errs: _Problems,
    path: str,
    spec: m.PodSpec,
    volume_names: frozenset[str],
    container_names: dict[str, str],
) -> None:
    """Check ``spec.ephemeralContainers`` (``path`` is the spec's); ``container_names`` holds the
    app and init containers' names (and where each is), and gains the ephemeral ones."""
    targets = {c.name for c in (*spec.init_containers, *spec.containers)}
    for i, container in enumerate(spec.ephemeral_containers):
        where = _item(_field(path, "ephemeralContainers"), i)
        check_container(
            errs,
            where,
            container,
            init=False,
            volume_names=volume_names,
            host_network=spec.host_network,
        )
        for name in forbidden_fields(container):
            errs.append(FieldError(_field(where, name), NOT_FOR_EPHEMERAL))
        for j, mount in enumerate(container.volume_mounts):
            mount_at = _item(_field(where, "volumeMounts"), j)
            if mount.sub_path:
                errs.append(FieldError(_field(mount_at, "subPath"), NOT_FOR_EPHEMERAL))
            if mount.sub_path_expr:
                errs.append(FieldError(_field(mount_at, "subPathExpr"), NOT_FOR_EPHEMERAL))
        target = container.target_container_name
        if target and target not in targets:
            errs.append(
                FieldError(
                    _field(where, "targetContainerName"),
                    f"no app or init container named {target!r} in the pod",
                )
            )
        if container.name in container_names:
            errs.append(
                FieldError(
                    _field(where, "name"),
                    f"duplicate container name {container.name!r} "
                    f"(also {container_names[container.name]})",
                )
            )
        elif container.name:
            container_names[container.name] = where
