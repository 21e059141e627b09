"""Merging pod sources: ``PodConfig`` joins the updates of every source and knows when all have
reported; ``SourcePoller`` polls file and HTTP sources and reports their problems."""

from kubecore._config.base import SourceProblem
from kubecore._config.podconfig import PodConfig
from kubecore._config.poller import SourcePoller
from kubecore._util.exports import publish as _publish

__all__ = ["PodConfig", "SourcePoller", "SourceProblem"]

_publish(__all__, globals(), __name__)
