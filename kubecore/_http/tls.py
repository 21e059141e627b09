"""TLS on the bounded server (``kubecore._http.serving``): connections are accepted with the
handshake left to the first read, which the selector drives without blocking."""

from __future__ import annotations

import errno
import ssl

from kubecore._http.serving import Admit, BoundedServer, Handle, Limits


class _SelectorFriendlySSLSocket(ssl.SSLSocket):
    """A server-side TLS socket whose non-blocking ``recv`` says "no data yet" the way a plain
    socket does, so the selector thread of ``BoundedServer`` waits for the rest of a record
    (or of the handshake, which the first ``recv`` performs) instead of dropping the client."""

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        try:
            return super().recv(buflen, flags)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError(errno.EAGAIN, "TLS data incomplete") from None


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    context.sslsocket_class = _SelectorFriendlySSLSocket
    return context


class TLSBoundedServer(BoundedServer):
    """``BoundedServer`` over TLS: connections are accepted with the handshake left to the
    first read, which the selector drives without blocking. A connection refused for want of
    room is only closed: before its handshake nothing can be said to it in TLS."""

    refusal = b""

    def __init__(
        self,
        address: str,
        port: int,
        handle: Handle,
        limits: Limits,
        context: ssl.SSLContext,
        admit: Admit,
    ) -> None:
        super().__init__(address, port, handle, limits, admit)
        listener = context.wrap_socket(
            self._listener, server_side=True, do_handshake_on_connect=False
        )
        listener.setblocking(False)
        self._listener = listener
