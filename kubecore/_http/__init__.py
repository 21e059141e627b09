"""The agent's HTTP endpoints: the kubelet API (``/healthz``, ``/pods``, container logs, exec,
node logs, ``/metrics``, ``/stats/summary``) and the port the node's Kubernetes API
(``kubecore._api``) is served on. ``server`` holds ``KubeletServer`` (the site: the routes, the
follow-stream slots, which requests may send a body) and ``serve``; ``handler`` answers one
request (routing, bodies, streams, errors as a v1 ``Status``); the endpoints are ``health``
(``/healthz``), ``pods`` (``/pods``, ``/containerLogs``), ``run`` (``/run``, exec), ``node_logs``
(``/logs``) and ``metrics`` (``/metrics``, ``/stats/summary``); ``config`` is ``ServerConfig``
and what the server reads from the agent; ``serving`` the bounded server under it and ``tls`` that
server over TLS. What every endpoint shares (v1 ``Status`` errors, the bearer-token check, query
parameters) is in ``kubecore._apimachinery.rules``."""
