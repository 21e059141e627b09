"""Streams served to clients: the WebSocket connection (``websocket``) and, on it, the
sessions of ``kubectl exec``, ``attach``, ``cp`` and ``port-forward`` between a client and a
runtime's ``StreamSession`` or forwarded socket (``kubecore._contract.streaming``). Exec and
attach: the ``channel.k8s.io`` framing (``channels``) and the sessions (``remotecommand``)."""
