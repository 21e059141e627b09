"""Volumes: the model of every volume source, the object lookup configMap and secret volumes read,
the atomic writer, and the runtime's mount propagation."""

from kubecore._contract.errors import MountFailed
from kubecore._contract.values import MountPropagation
from kubecore._model.v1 import (
    ConfigMapProjection,
    ConfigMapVolumeSource,
    DownwardAPIProjection,
    DownwardAPIVolumeFile,
    DownwardAPIVolumeSource,
    ImageVolumeSource,
    KeyToPath,
    PersistentVolumeClaimVolumeSource,
    ProjectedVolumeSource,
    SecretProjection,
    SecretVolumeSource,
    ServiceAccountTokenProjection,
    VolumeProjection,
)
from kubecore._util.exports import publish as _publish
from kubecore._volumes.atomic_writer import FileProjection, write_atomically
from kubecore._volumes.pod_dirs import EMPTY_DIR_PLUGIN, PodVolume
from kubecore._volumes.sources import DictObjects, ObjectLookup

__all__ = [  # noqa: RUF022 (plainly sorted, as every namespace's)
    "ConfigMapProjection",
    "ConfigMapVolumeSource",
    "DictObjects",
    "DownwardAPIProjection",
    "DownwardAPIVolumeFile",
    "DownwardAPIVolumeSource",
    "EMPTY_DIR_PLUGIN",
    "FileProjection",
    "ImageVolumeSource",
    "KeyToPath",
    "MountFailed",
    "MountPropagation",
    "ObjectLookup",
    "PersistentVolumeClaimVolumeSource",
    "PodVolume",
    "ProjectedVolumeSource",
    "SecretProjection",
    "SecretVolumeSource",
    "ServiceAccountTokenProjection",
    "VolumeProjection",
    "write_atomically",
]

_publish(__all__, globals(), __name__)
