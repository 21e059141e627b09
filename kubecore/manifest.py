"""Pod manifests (YAML or JSON, v1 ``Pod`` or ``List``): load, validate, dump, and the errors
that name each problem."""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._contract.errors import (
        DocumentError as DocumentError,
    )
    from kubecore._contract.errors import (
        FieldError as FieldError,
    )
    from kubecore._contract.errors import (
        ValidationError as ValidationError,
    )
    from kubecore._manifest import (
        assign_uid as assign_uid,
    )
    from kubecore._manifest import (
        dump_pod_json as dump_pod_json,
    )
    from kubecore._manifest import (
        dump_pod_yaml as dump_pod_yaml,
    )
    from kubecore._manifest import (
        dump_pods_yaml as dump_pods_yaml,
    )
    from kubecore._manifest import (
        load_manifest_from_dict as load_manifest_from_dict,
    )
    from kubecore._manifest import (
        load_manifest_lenient as load_manifest_lenient,
    )
    from kubecore._manifest import (
        load_pods_from_dict as load_pods_from_dict,
    )
    from kubecore._manifest import (
        load_pods_from_file as load_pods_from_file,
    )
    from kubecore._manifest import (
        load_pods_from_string as load_pods_from_string,
    )
    from kubecore._manifest import (
        load_pods_lenient as load_pods_lenient,
    )
    from kubecore._manifest import (
        object_to_dict as object_to_dict,
    )
    from kubecore._manifest import (
        parse_document as parse_document,
    )
    from kubecore._manifest import (
        pod_from_dict as pod_from_dict,
    )
    from kubecore._manifest import (
        pod_to_dict as pod_to_dict,
    )
    from kubecore._manifest import (
        stamp_source as stamp_source,
    )
    from kubecore._manifest import (
        validate_pod as validate_pod,
    )
    from kubecore._manifest.decoding import (
        pod_status_to_dict as pod_status_to_dict,
    )
    from kubecore._model.v1 import (
        default_pull_policy as default_pull_policy,
    )
    from kubecore._util.timefmt import (
        rfc3339 as rfc3339,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
