"""The agent's HTTP API: ``/healthz``, ``/pods``, container logs, ``/metrics``, stats."""

from kubecore._server import KubeletServer, ServerConfig, serve

__all__ = ["KubeletServer", "ServerConfig", "serve"]
