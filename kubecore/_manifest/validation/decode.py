"""From plain data to a checked object: ``decode_pod`` and ``decode_object`` decode a document and
validate it. A validation problem at, above or below a path that already has a decoding problem is
dropped: it would only repeat the decoding problem through a placeholder."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence, Set

import attrs

from kubecore._contract.errors import FieldError, ValidationError
from kubecore._manifest.decoding import _POD, OBJECT_KINDS, _field, _item, _Problems
from kubecore._manifest.validation.metadata import check_metadata
from kubecore._manifest.validation.names import config_key_problem
from kubecore._manifest.validation.pod import validate
from kubecore._model import v1 as m

_POD_TEMPLATES = {
    "Deployment": "spec.template",
    "ReplicaSet": "spec.template",
    "ReplicationController": "spec.template",
    "StatefulSet": "spec.template",
    "DaemonSet": "spec.template",
    "Job": "spec.template",
    "CronJob": "spec.jobTemplate.spec.template",
}


_CONTROL_PLANE_KINDS = frozenset(
    {
        "Service", "Endpoints", "EndpointSlice", "Ingress", "IngressClass", "NetworkPolicy",
        "Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
        "ClusterRoleBinding", "PersistentVolume", "PersistentVolumeClaim", "StorageClass",
        "HorizontalPodAutoscaler", "PodDisruptionBudget", "LimitRange", "ResourceQuota",
        "PriorityClass", "RuntimeClass", "Node", "Event", "Lease", "CustomResourceDefinition",
    }
)  # fmt: skip
"""Well-known kinds of the API server that a node agent does not read (a kind outside these
is read as a misspelt Pod, so that its other problems are shown too)."""


def kind_refusal(kind: str) -> str | None:
    """Why a document of a well-known ``kind`` other than Pod is not run (None otherwise)."""
    if kind not in _POD_TEMPLATES and kind not in _CONTROL_PLANE_KINDS:
        return None
    template = _POD_TEMPLATES.get(kind)
    if template is not None:
        return (
            f"a {kind} is not run by kubecore: a node agent runs Pods, and a {kind} becomes"
            " Pods through a controller of the Kubernetes control plane; to run its pods here,"
            f" write its pod template ({template}) as a Pod"
        )
    return (
        f"a {kind} is not read by kubecore: a node agent reads Pods and the ConfigMaps and"
        f" Secrets they use, and other Kubernetes components handle a {kind}"
    )


def decode_pod(data: object, path: str) -> tuple[m.Pod, _Problems]:
    if isinstance(data, Mapping) and data.get("status") == {}:
        data = {k: v for k, v in data.items() if k != "status"}
    decode_errs: _Problems = []
    pod: m.Pod = _POD.load(data, path, decode_errs)
    kind = data.get("kind") if isinstance(data, Mapping) else None
    refusal = kind_refusal(kind) if isinstance(kind, str) else None
    if refusal is not None:  # not a pod: its fields would only repeat that
        return pod, [FieldError(_field(path, "kind"), refusal)]
    return pod, _dedupe([*decode_errs, *_not_repeating(validate(pod, path), decode_errs)])


def _not_repeating(problems: Iterable[FieldError], decode_errs: Sequence[FieldError]) -> _Problems:
    """The validation problems not at, above or below a decoding problem's path.

    Set lookups instead of comparing every pair, so that a pod with thousands of bad containers
    does not cost their product; a prefix is cut only at a length the other side has, so that a
    key of thousands of dots does not cost its length squared.
    """
    problems = list(problems)
    decoded = {d.path for d in decode_errs}
    decoded_lengths = {len(path) for path in decoded}
    problem_lengths = {len(p.path) for p in problems}
    above_decoded = {a for path in decoded for a in _ancestors(path, problem_lengths)}
    return [
        p
        for p in problems
        if p.path not in above_decoded and decoded.isdisjoint(_ancestors(p.path, decoded_lengths))
    ]


def _ancestors(path: str, lengths: Set[int]) -> list[str]:
    """Of ``path`` and every path it lies under (``a.b[2]``: ``""``, ``a``, ``a.b`` and itself),
    those of one of ``lengths``."""
    ends = [0, *(i for i, char in enumerate(path) if char in ".["), len(path)]
    return [path[:end] for end in ends if end in lengths]


def _dedupe(problems: Iterable[FieldError]) -> _Problems:
    """Unique problems, grouped by place: ``containers[2]`` before ``containers[10]``."""
    return sorted(dict.fromkeys(problems), key=lambda p: _path_key(p.path))


def _path_key(path: str) -> list[tuple[int, int, str]]:
    # An index sorts by length, then text: numeric order without converting (a key of 5,000
    # digits is not an index, and int() would refuse it).
    return [
        (1, len(token), token) if token.isascii() and token.isdigit() else (0, 0, token)
        for token in re.split(r"[.\[\]]+", path)
        if token
    ]


def decode_object(data: Mapping[str, object], path: str) -> tuple[m.KubeObject, _Problems]:
    """A ConfigMap or Secret document (``data["kind"]`` names which), decoded and checked.

    A Secret's ``stringData`` is merged into its ``data`` (its keys win). Problems never quote a
    Secret's values.
    """
    spec = OBJECT_KINDS[str(data.get("kind"))]
    decode_errs: _Problems = []
    obj: m.KubeObject = spec.load(data, path, decode_errs)
    errs: _Problems = []
    if obj.api_version != "v1":
        errs.append(
            FieldError(
                _field(path, "apiVersion"),
                f"must be 'v1', got {obj.api_version!r}" if obj.api_version else "required",
            )
        )
    check_metadata(errs, _field(path, "metadata"), obj.metadata)
    if isinstance(obj, m.ConfigMap):
        keyed = [("data", key) for key in obj.data] + [("binaryData", k) for k in obj.binary_data]
        for key in obj.data.keys() & obj.binary_data.keys():
            errs.append(
                FieldError(_item(_field(path, "binaryData"), key), "duplicate of a key in data")
            )
    else:
        if not obj.type:  # the API server's default
            obj = attrs.evolve(obj, type=m.SECRET_TYPE_OPAQUE)
        if obj.string_data:
            merged = {**obj.data, **{k: v.encode() for k, v in obj.string_data.items()}}
            obj = attrs.evolve(obj, data=merged, string_data={})
        keyed = [("data", key) for key in obj.data]
        errs.extend(_secret_type_problems(obj, path))
    for field, key in keyed:
        problem = config_key_problem(key)
        if problem:
            errs.append(FieldError(_item(_field(path, field), key), problem))
    return obj, _dedupe([*decode_errs, *_not_repeating(errs, decode_errs)])


_SECRET_TYPE_KEYS = {
    m.SECRET_TYPE_DOCKER_CONFIG_JSON: ".dockerconfigjson",
    m.SECRET_TYPE_DOCKERCFG: ".dockercfg",
}


_SECRET_TYPE_REQUIRED = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}
"""Keys the API server requires of these Secret types (besides the docker config types)."""


def _secret_type_problems(secret: m.Secret, path: str) -> _Problems:
    required = _SECRET_TYPE_REQUIRED.get(secret.type, ())
    missing = [
        FieldError(_item(_field(path, "data"), k), f"required for a Secret of type {secret.type}")
        for k in required
        if k not in secret.data
    ]
    if secret.type == "kubernetes.io/basic-auth" and not (
        secret.data.keys() & {"username", "password"}
    ):
        missing.append(
            FieldError(
                _field(path, "data"),
                "a Secret of type kubernetes.io/basic-auth needs a username or a password",
            )
        )
    key = _SECRET_TYPE_KEYS.get(secret.type)
    if key is None:
        return missing
    where = _item(_field(path, "data"), key)
    raw = secret.data.get(key)
    if raw is None:
        return [FieldError(where, f"required for a Secret of type {secret.type}")]
    try:
        parsed = json.loads(raw)
    except ValueError:
        return [FieldError(where, "not valid JSON (value not shown)")]
    if not isinstance(parsed, dict):
        return [FieldError(where, "must be a JSON object (value not shown)")]
    return []


def pod_from_dict(data: object, *, path: str = "") -> m.Pod:
    """Build and validate a pod from its v1 JSON shape; raises ``ValidationError`` listing every
    problem. ``path`` prefixes every problem's path (e.g. ``items[2]``)."""
    pod, problems = decode_pod(data, path)
    if problems:
        raise ValidationError(problems)
    return pod
