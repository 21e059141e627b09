"""The agent's HTTP API: ``/healthz``, ``/pods``, container logs, ``/metrics``, stats."""

from kubecore._exports import publish as _publish
from kubecore._server import KubeletServer, ServerConfig, serve

__all__ = ["KubeletServer", "ServerConfig", "serve"]

_publish(__all__, globals(), __name__)
