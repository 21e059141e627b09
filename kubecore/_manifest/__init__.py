"""Manifests: reading, checking and writing ``v1`` Pods, ConfigMaps and Secrets as YAML or JSON.

Reading a manifest happens in passes over plain data, one module each:

1. ``documents`` reads YAML or JSON text (strings, files, directories) into documents and expands
   ``kind: List``; whatever is wrong with the text becomes a problem with a position.
2. ``decoding`` walks each document with a small declarative table per model class, checking JSON
   types, required fields and unknown fields (``fields`` says why a refused field is refused); it
   also writes pods back. ``field_table`` renders the Pod field table from those tables.
3. ``validation`` (a package, one module a part of the pod; ``validate_pod``) checks the rules
   about values on the built ``Pod``, with ``security`` for the security contexts. Embedders who
   build pods in code call it directly.
"""

from kubecore._manifest.decoding import (
    dump_pod_json,
    dump_pod_yaml,
    dump_pods_yaml,
    object_to_dict,
    pod_status_to_dict,
    pod_to_dict,
)
from kubecore._manifest.documents import (
    MAX_MANIFEST_BYTES,
    DocumentError,
    decode_manifest_bytes,
    load_manifest_from_dict,
    load_manifest_lenient,
    load_pods_from_dict,
    load_pods_from_file,
    load_pods_from_string,
    load_pods_lenient,
    parse_document,
    read_manifest_bytes,
    read_manifest_text,
)
from kubecore._manifest.identity import assign_uid, stamp_source
from kubecore._manifest.validation import pod_from_dict, validate_pod

__all__ = [
    "MAX_MANIFEST_BYTES",
    "DocumentError",
    "assign_uid",
    "decode_manifest_bytes",
    "dump_pod_json",
    "dump_pod_yaml",
    "dump_pods_yaml",
    "load_manifest_from_dict",
    "load_manifest_lenient",
    "load_pods_from_dict",
    "load_pods_from_file",
    "load_pods_from_string",
    "load_pods_lenient",
    "object_to_dict",
    "parse_document",
    "pod_from_dict",
    "pod_status_to_dict",
    "pod_to_dict",
    "read_manifest_bytes",
    "read_manifest_text",
    "stamp_source",
    "validate_pod",
]
