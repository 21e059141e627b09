"""Merging pod sources: ``PodConfig`` joins the updates of every source and knows when all have
reported; ``SourcePoller`` polls file and HTTP sources and reports their problems."""

from kubecore._exports import publish as _publish
from kubecore._podconfig import PodConfig
from kubecore._sources import SourcePoller, SourceProblem

__all__ = ["PodConfig", "SourcePoller", "SourceProblem"]

_publish(__all__, globals(), __name__)
