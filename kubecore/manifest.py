"""Pod manifests (YAML or JSON, v1 ``Pod`` or ``List``): load, validate, dump (times in the v1
form, ``rfc3339``)."""

from kubecore._manifest import (
    assign_uid,
    dump_pod_json,
    dump_pod_yaml,
    dump_pods_yaml,
    load_manifest_lenient,
    load_pods_from_dict,
    load_pods_from_file,
    load_pods_from_string,
    load_pods_lenient,
    object_to_dict,
    pod_from_dict,
    pod_status_to_dict,
    pod_to_dict,
    stamp_source,
    validate_pod,
)
from kubecore._model.v1 import default_pull_policy
from kubecore._util.exports import publish as _publish
from kubecore._util.timefmt import rfc3339

__all__ = [
    "assign_uid",
    "default_pull_policy",
    "dump_pod_json",
    "dump_pod_yaml",
    "dump_pods_yaml",
    "load_manifest_lenient",
    "load_pods_from_dict",
    "load_pods_from_file",
    "load_pods_from_string",
    "load_pods_lenient",
    "object_to_dict",
    "pod_from_dict",
    "pod_status_to_dict",
    "pod_to_dict",
    "rfc3339",
    "stamp_source",
    "validate_pod",
]

_publish(__all__, globals(), __name__)
