"""The agent's HTTP API: ``/healthz``, ``/pods``, container logs, ``/metrics``, stats."""

from kubecore._http.server import KubeletServer, ServerConfig, serve
from kubecore._util.exports import publish as _publish

__all__ = ["KubeletServer", "ServerConfig", "serve"]

_publish(__all__, globals(), __name__)
