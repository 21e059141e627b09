"""A SPDY/3.1 connection over a byte transport (a socket, or a WebSocket carrying SPDY bytes):
streams opened by either side, read and written from any thread, while one thread runs
``serve`` (the reader).

Flow control is SPDY/3.1's when ``flow_control`` is on: every stream, and the connection as a
whole (stream 0), starts with a 64 KiB send window that each data frame uses up and each
WINDOW_UPDATE from the peer refills (SETTINGS ``INITIAL_WINDOW_SIZE`` changes the streams'); a
writer waits for window, and a reader hands window back (WINDOW_UPDATE) once it has consumed half
of it, so a transfer of any size neither stalls nor overruns; data beyond the window it granted is
refused (RST_STREAM ``FLOW_CONTROL_ERROR``). moby's ``spdystream``, which ``kubectl`` and the
kubelet use, implements none of it (it neither sends nor reads WINDOW_UPDATE), so with such a
peer ``flow_control`` is off: nothing is counted, and a stream's unread data is bounded instead by
not reading the transport while a stream holds ``buffer_bytes`` unread (TCP then pushes back).

Bounded: the frame and header-block sizes (``kubecore._streaming.spdy``) and the open streams
(``max_streams``; past it a new stream is refused with ``REFUSED_STREAM``).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Protocol

from kubecore._contract.errors import SpdyClosed, SpdyProtocolError
from kubecore._streaming.spdy import (
    DEFAULT_MAX_FRAME_LENGTH,
    DEFAULT_MAX_HEADER_BLOCK,
    MAX_WINDOW,
    DataFrame,
    Frame,
    FrameReader,
    FrameWriter,
    GoAway,
    GoAwayStatus,
    Headers,
    HeadersFrame,
    Ping,
    RstStatus,
    RstStream,
    Setting,
    SettingsFrame,
    SynReply,
    SynStream,
    WindowUpdate,
)

logger = logging.getLogger(__name__)

INITIAL_WINDOW = 64 * 1024
MAX_DATA_CHUNK = 32 * 1024
"""The largest data frame this end sends."""
DEFAULT_BUFFER_BYTES = 256 * 1024
DEFAULT_MAX_STREAMS = 1000


class Transport(Protocol):
    """Bytes both ways, as a connected socket carries them."""

    def recv(self) -> bytes:
        """Block for what arrives next: b"" once the peer is gone."""
        ...

    def send(self, data: bytes) -> None:
        """Send all of ``data``."""
        ...

    def close(self) -> None:
        """End the transport both ways (a ``recv`` waiting returns b"")."""
        ...


class SpdyStream:
    """One stream. ``headers`` are those of its SYN_STREAM. Reads return b"" at the peer's FIN
    (or once the stream is reset or the connection is gone; ``reset_status`` tells)."""

    def __init__(self, connection: SpdyConnection, stream_id: int, headers: Headers) -> None:
        self.id = stream_id
        self.headers = headers
        self._connection = connection
        self._buffer: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        self.remote_closed = False
        self.local_closed = False
        self.reset_status: int | None = None
        self.send_window = connection.initial_send_window
        self.recv_window = connection.receive_window
        self.unacknowledged = 0
        self.discarding = False
        self.replied = threading.Event()

    def reply(self, headers: Headers = (), *, fin: bool = False) -> None:
        """Accept the peer's stream (SYN_REPLY)."""
        self._connection.send_frame(SynReply(self.id, headers, fin))
        if fin:
            self._connection.half_closed(self, local=True)

    def read(self, max_bytes: int = 65536) -> bytes:
        """Up to ``max_bytes`` the peer sent, waiting for some; b"" at its FIN."""
        return self._connection.read(self, max_bytes)

    def write(self, data: bytes) -> None:
        """Send ``data``, waiting for window as needed; ``SpdyClosed`` when the stream is reset,
        half-closed by this end, or the connection is gone."""
        self._connection.write(self, data)

    def close(self) -> None:
        """Half-close: this end sends no more (an empty data frame with FIN); idempotent."""
        self._connection.finish(self)

    def reset(self, status: int = RstStatus.CANCEL) -> None:
        """End the stream both ways at once (RST_STREAM)."""
        self._connection.reset(self, status)

    def discard_input(self) -> None:
        """Drop what the peer sends on this stream from now on (a stream this end never reads
        must not hold the connection's reader)."""
        self._connection.discard(self)

    def take(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of what is buffered (the caller holds the connection's lock)."""
        parts: list[bytes] = []
        size = 0
        while self._buffer and size < max_bytes:
            chunk = self._buffer.popleft()
            if size + len(chunk) > max_bytes:
                cut = max_bytes - size
                self._buffer.appendleft(chunk[cut:])
                chunk = chunk[:cut]
            parts.append(chunk)
            size += len(chunk)
        self.buffered -= size
        return b"".join(parts)

    def put(self, data: bytes) -> None:
        """Buffer ``data`` the peer sent (the caller holds the connection's lock)."""
        self._buffer.append(data)
        self.buffered += len(data)


class SpdyConnection:
    """One SPDY/3.1 connection; ``client`` says which end this is (clients open odd streams).
    ``accept`` is called, in the reader thread, with each stream the peer opens; it must not
    block (reply or reset, and hand the stream to another thread). None refuses them."""

    def __init__(
        self,
        transport: Transport,
        *,
        client: bool,
        accept: Callable[[SpdyStream], None] | None = None,
        flow_control: bool = True,
        max_streams: int = DEFAULT_MAX_STREAMS,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        max_header_block: int = DEFAULT_MAX_HEADER_BLOCK,
        receive_window: int = INITIAL_WINDOW,
    ) -> None:
        self._transport = transport
        self.receive_window = receive_window
        self._client = client
        self._accept = accept
        self.flow_control = flow_control
        self._max_streams = max_streams
        self._buffer_bytes = buffer_bytes
        self._reader = FrameReader(
            max_frame_length=max_frame_length, max_header_block=max_header_block
        )
        self._writer = FrameWriter()
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._streams: dict[int, SpdyStream] = {}
        self._next_id = 1 if client else 2
        self._last_peer_id = 0
        self._next_ping = 1 if client else 2
        self.initial_send_window = INITIAL_WINDOW
        self._send_window = INITIAL_WINDOW
        self._recv_window = INITIAL_WINDOW
        self._unacknowledged = 0
        self.going_away = False
        self.closed = threading.Event()

    # --- the reader

    def serve(self) -> None:
        """Read and act on frames until the peer goes or the bytes are not SPDY/3.1. A
        ``receive_window`` other than the default is announced first (SETTINGS)."""
        try:
            if self.flow_control and self.receive_window != INITIAL_WINDOW:
                window = ((Setting.INITIAL_WINDOW_SIZE, self.receive_window, 0),)
                self.send_frame(SettingsFrame(window))
            while not self.closed.is_set():
                try:
                    data = self._transport.recv()
                except OSError:
                    break
                if not data:
                    break
                for frame in self._reader.feed(data):
                    self._handle(frame)
        except SpdyProtocolError as error:
            logger.info("SPDY connection ended: %s", error)
            with contextlib.suppress(SpdyClosed):
                self.send_frame(GoAway(self._last_peer_id, GoAwayStatus.PROTOCOL_ERROR))
        except SpdyClosed:
            pass
        finally:
            self._end()

    def _handle(self, frame: Frame) -> None:
        if isinstance(frame, DataFrame):
            self._on_data(frame)
        elif isinstance(frame, SynStream):
            self._on_syn_stream(frame)
        elif isinstance(frame, (SynReply, HeadersFrame)):
            stream = self._streams.get(frame.stream_id)
            if stream is not None:
                stream.replied.set()
                if frame.fin:
                    self.half_closed(stream, local=False)
        elif isinstance(frame, RstStream):
            self._on_reset(frame)
        elif isinstance(frame, SettingsFrame):
            self._on_settings(frame)
        elif isinstance(frame, Ping):
            if frame.ping_id % 2 != self._next_ping % 2:  # the peer's ping: echo it
                self.send_frame(frame)
        elif isinstance(frame, GoAway):
            with self._cond:
                self.going_away = True
        else:
            self._on_window_update(frame)

    def _on_syn_stream(self, frame: SynStream) -> None:
        peer_parity = 0 if self._client else 1
        if frame.stream_id % 2 != peer_parity or frame.stream_id <= self._last_peer_id:
            raise SpdyProtocolError(f"SYN_STREAM with stream id {frame.stream_id} out of order")
        self._last_peer_id = frame.stream_id
        with self._cond:
            refused = self._accept is None or self.going_away
            refused = refused or len(self._streams) >= self._max_streams
            if not refused:
                stream = SpdyStream(self, frame.stream_id, frame.headers)
                stream.remote_closed = frame.fin
                stream.local_closed = frame.unidirectional
                self._streams[stream.id] = stream
        if refused:
            self.send_frame(RstStream(frame.stream_id, RstStatus.REFUSED_STREAM))
            return
        assert self._accept is not None
        self._accept(stream)

    def _on_data(self, frame: DataFrame) -> None:
        status: RstStatus | None = None
        with self._cond:
            stream = self._streams.get(frame.stream_id)
            size = len(frame.data)
            if stream is None:
                status = RstStatus.INVALID_STREAM
            elif stream.remote_closed:
                status = RstStatus.STREAM_ALREADY_CLOSED
            elif self.flow_control and (size > stream.recv_window or size > self._recv_window):
                status = RstStatus.FLOW_CONTROL_ERROR
            else:
                if self.flow_control:
                    stream.recv_window -= size
                    self._recv_window -= size
                else:
                    while (
                        stream.buffered >= self._buffer_bytes
                        and stream.reset_status is None
                        and not stream.discarding
                        and not self.closed.is_set()
                    ):
                        self._cond.wait(1.0)
                if frame.data and stream.reset_status is None and not stream.discarding:
                    stream.put(frame.data)
                if frame.fin:
                    stream.remote_closed = True
                    self._forget_if_done(stream)
                self._cond.notify_all()
        if status is not None:
            self.send_frame(RstStream(frame.stream_id, status))
            if stream is not None and status is not RstStatus.STREAM_ALREADY_CLOSED:
                self._mark_reset(stream, status)

    def _on_reset(self, frame: RstStream) -> None:
        with self._cond:
            stream = self._streams.get(frame.stream_id)
        if stream is not None:
            self._mark_reset(stream, frame.status)

    def _on_settings(self, frame: SettingsFrame) -> None:
        for key, value, _ in frame.entries:
            if key == Setting.INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise SpdyProtocolError(f"an INITIAL_WINDOW_SIZE of {value}")
                with self._cond:
                    delta = value - self.initial_send_window
                    self.initial_send_window = value
                    for stream in self._streams.values():
                        stream.send_window += delta
                    self._cond.notify_all()

    def _on_window_update(self, frame: WindowUpdate) -> None:
        with self._cond:
            if frame.stream_id == 0:
                self._send_window += frame.delta
                if self._send_window > MAX_WINDOW:
                    raise SpdyProtocolError("the connection's send window is over 2^31 - 1")
                stream = None
            else:
                stream = self._streams.get(frame.stream_id)
                if stream is not None:
                    stream.send_window += frame.delta
            self._cond.notify_all()
        if stream is not None and stream.send_window > MAX_WINDOW:
            self.reset(stream, RstStatus.FLOW_CONTROL_ERROR)

    # --- streams

    def open_stream(self, headers: Headers, *, fin: bool = False) -> SpdyStream:
        """Open a stream to the peer (SYN_STREAM); ``fin`` sends nothing on it."""
        with self._send_lock:
            with self._cond:
                if self.closed.is_set() or self.going_away:
                    raise SpdyClosed("the connection is closing")
                stream = SpdyStream(self, self._next_id, headers)
                stream.local_closed = fin
                self._next_id += 2
                self._streams[stream.id] = stream
            self._send_locked(SynStream(stream.id, headers, fin=fin))
        return stream

    def read(self, stream: SpdyStream, max_bytes: int) -> bytes:
        """``stream.read``: wait for data, hand window back as it is consumed."""
        updates: list[Frame] = []
        with self._cond:
            while not stream.buffered and not (
                stream.remote_closed or stream.reset_status is not None or self.closed.is_set()
            ):
                self._cond.wait()
            data = stream.take(max_bytes)
            self._cond.notify_all()
            if self.flow_control and data:
                updates = self._acknowledge(stream, len(data))
        for frame in updates:
            with contextlib.suppress(SpdyClosed):
                self.send_frame(frame)
        return data

    def _acknowledge(self, stream: SpdyStream, size: int) -> list[Frame]:
        """WINDOW_UPDATE frames once half a window has been consumed (the lock is held)."""
        updates: list[Frame] = []
        stream.unacknowledged += size
        if stream.unacknowledged >= max(1, self.receive_window // 2) and not stream.remote_closed:
            updates.append(WindowUpdate(stream.id, stream.unacknowledged))
            stream.recv_window += stream.unacknowledged
            stream.unacknowledged = 0
        self._unacknowledged += size
        if self._unacknowledged >= INITIAL_WINDOW // 2:
            updates.append(WindowUpdate(0, self._unacknowledged))
            self._recv_window += self._unacknowledged
            self._unacknowledged = 0
        return updates

    def write(self, stream: SpdyStream, data: bytes) -> None:
        """``stream.write``: data frames of at most the windows left."""
        view = memoryview(data)
        while view:
            with self._cond:
                while self._write_blocked(stream):
                    self._cond.wait()
                if stream.local_closed or stream.reset_status is not None or self.closed.is_set():
                    raise SpdyClosed(f"stream {stream.id} is closed for writing")
                size = min(len(view), MAX_DATA_CHUNK)
                if self.flow_control:
                    size = min(size, stream.send_window, self._send_window)
                    stream.send_window -= size
                    self._send_window -= size
            self.send_frame(DataFrame(stream.id, bytes(view[:size])))
            view = view[size:]

    def _write_blocked(self, stream: SpdyStream) -> bool:
        if stream.local_closed or stream.reset_status is not None or self.closed.is_set():
            return False
        return self.flow_control and (stream.send_window <= 0 or self._send_window <= 0)

    def finish(self, stream: SpdyStream) -> None:
        """``stream.close``: FIN once, unless the stream is already gone."""
        with self._cond:
            if stream.local_closed or stream.reset_status is not None or self.closed.is_set():
                return
        with contextlib.suppress(SpdyClosed):
            self.send_frame(DataFrame(stream.id, b"", fin=True))
        self.half_closed(stream, local=True)

    def half_closed(self, stream: SpdyStream, *, local: bool) -> None:
        """This end (``local``) or the peer sends no more on the stream; once both have, the
        connection forgets it."""
        with self._cond:
            if local:
                stream.local_closed = True
            else:
                stream.remote_closed = True
            self._forget_if_done(stream)
            self._cond.notify_all()

    def reset(self, stream: SpdyStream, status: int) -> None:
        """``stream.reset``: RST_STREAM once."""
        with self._cond:
            if stream.reset_status is not None:
                return
        with contextlib.suppress(SpdyClosed):
            self.send_frame(RstStream(stream.id, status))
        self._mark_reset(stream, status)

    def discard(self, stream: SpdyStream) -> None:
        """``stream.discard_input``."""
        with self._cond:
            stream.discarding = True
            stream.take(stream.buffered)
            self._cond.notify_all()

    def _mark_reset(self, stream: SpdyStream, status: int) -> None:
        with self._cond:
            if stream.reset_status is None:
                stream.reset_status = status
            self._streams.pop(stream.id, None)
            self._cond.notify_all()

    def _forget_if_done(self, stream: SpdyStream) -> None:
        if stream.local_closed and stream.remote_closed:
            self._streams.pop(stream.id, None)

    # --- sending

    def ping(self) -> None:
        """Send a PING with this end's next id (odd for a client, even for a server)."""
        with self._cond:
            ping_id = self._next_ping
            self._next_ping += 2
        self.send_frame(Ping(ping_id))

    def send_frame(self, frame: Frame) -> None:
        """Send one frame, whole, between any others; ``SpdyClosed`` once the connection is gone."""
        with self._send_lock:
            self._send_locked(frame)

    def _send_locked(self, frame: Frame) -> None:
        if self.closed.is_set():
            raise SpdyClosed("the connection is closed")
        data = self._writer.encode(frame)
        try:
            self._transport.send(data)
        except OSError as error:
            self._end()
            raise SpdyClosed(f"the connection broke: {error}") from error

    def close(self) -> None:
        """Say GOAWAY and close the transport; every stream ends."""
        with contextlib.suppress(SpdyClosed):
            self.send_frame(GoAway(self._last_peer_id, GoAwayStatus.OK))
        self._end()

    def _end(self) -> None:
        with self._cond:
            if self.closed.is_set():
                return
            self.closed.set()
            self._cond.notify_all()
        with contextlib.suppress(OSError):
            self._transport.close()
