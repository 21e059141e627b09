"""SPDY/3.1 framing, sans-IO: frames to bytes (``FrameWriter``) and bytes to frames
(``FrameReader``), written from the SPDY/3.1 draft (the protocol ``kubectl port-forward`` speaks,
through moby's ``spdystream``).

A frame is an 8-byte head and a payload. A control frame's head is ``1 | version (15 bits) |
type (16)`` then ``flags (8) | length (24)``; a data frame's is ``0 | stream id (31)`` then
``flags (8) | length (24)``. SYN_STREAM, SYN_REPLY and HEADERS carry a name/value header block
compressed with zlib, primed with the SPDY/3 dictionary; each direction of a connection keeps one
compression context for its whole life, so a block can only be read by the reader that read
every block before it (``FrameReader`` holds that context, ``FrameWriter`` the other).

What arrives is bounded: a frame's length (``max_frame_length``), a header block once
decompressed (``max_header_block``) and the pairs in it. Anything malformed raises
``SpdyProtocolError``, and nothing else: the connection cannot go on after it.
"""

from __future__ import annotations

import enum
import struct
import zlib

import attrs

from kubecore._contract.errors import SpdyProtocolError

VERSION = 3
MAX_STREAM_ID = 0x7FFFFFFF
MAX_WINDOW = 0x7FFFFFFF
MAX_LENGTH = 0xFFFFFF
"""The largest payload a frame's 24-bit length can say."""
DEFAULT_MAX_FRAME_LENGTH = 1024 * 1024
DEFAULT_MAX_HEADER_BLOCK = 64 * 1024
MAX_HEADER_PAIRS = 256

_DICTIONARY_WORDS = (
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
)
_DICTIONARY_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
HEADER_DICTIONARY: bytes = (
    b"".join(struct.pack(">I", len(word)) + word.encode() for word in _DICTIONARY_WORDS)
    + _DICTIONARY_TAIL.encode()
)
"""The zlib dictionary of SPDY/3 header blocks (the draft's section 2.6.10.1): each of its
words with a 4-byte length before it, then a run of common values; 1423 bytes."""


class FrameType(enum.IntEnum):
    SYN_STREAM = 1
    SYN_REPLY = 2
    RST_STREAM = 3
    SETTINGS = 4
    PING = 6
    GOAWAY = 7
    HEADERS = 8
    WINDOW_UPDATE = 9


class RstStatus(enum.IntEnum):
    """RST_STREAM status codes."""

    PROTOCOL_ERROR = 1
    INVALID_STREAM = 2
    REFUSED_STREAM = 3
    UNSUPPORTED_VERSION = 4
    CANCEL = 5
    INTERNAL_ERROR = 6
    FLOW_CONTROL_ERROR = 7
    STREAM_IN_USE = 8
    STREAM_ALREADY_CLOSED = 9
    INVALID_CREDENTIALS = 10
    FRAME_TOO_LARGE = 11


class GoAwayStatus(enum.IntEnum):
    """GOAWAY status codes."""

    OK = 0
    PROTOCOL_ERROR = 1
    INTERNAL_ERROR = 2


class Setting(enum.IntEnum):
    UPLOAD_BANDWIDTH = 1
    DOWNLOAD_BANDWIDTH = 2
    ROUND_TRIP_TIME = 3
    MAX_CONCURRENT_STREAMS = 4
    CURRENT_CWND = 5
    DOWNLOAD_RETRANS_RATE = 6
    INITIAL_WINDOW_SIZE = 7
    CLIENT_CERTIFICATE_VECTOR_SIZE = 8


FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
FLAG_CLEAR_SETTINGS = 0x01

Headers = tuple[tuple[str, str], ...]
"""A header block: (name, value) pairs, names lower case and unique; a value holding several
values separates them with NUL, as on the wire. Text is latin-1, so any byte survives."""


def header(headers: Headers, name: str) -> str | None:
    """The value of ``name`` in ``headers`` (None when absent)."""
    return next((value for key, value in headers if key == name), None)


def _stream_id(value: int) -> int:
    if not 0 <= value <= MAX_STREAM_ID:
        raise ValueError(f"a stream id is 31 bits: {value}")
    return value


def _u32(value: int) -> int:
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"not a 32-bit value: {value}")
    return value


@attrs.frozen
class DataFrame:
    """Bytes of one stream (``fin``: the sender's last)."""

    stream_id: int = attrs.field(validator=lambda _, __, v: _stream_id(v))
    data: bytes = b""
    fin: bool = False


@attrs.frozen
class SynStream:
    """SYN_STREAM: a stream opened, with its headers."""

    stream_id: int = attrs.field(validator=lambda _, __, v: _stream_id(v))
    headers: Headers = ()
    associated_to: int = attrs.field(default=0, validator=lambda _, __, v: _stream_id(v))
    priority: int = attrs.field(default=0, validator=attrs.validators.in_(range(8)))
    slot: int = attrs.field(default=0, validator=attrs.validators.in_(range(256)))
    fin: bool = False
    unidirectional: bool = False


@attrs.frozen
class SynReply:
    """SYN_REPLY: the peer's answer to a SYN_STREAM, with its headers."""

    stream_id: int = attrs.field(validator=lambda _, __, v: _stream_id(v))
    headers: Headers = ()
    fin: bool = False


@attrs.frozen
class HeadersFrame:
    """HEADERS: more headers for an open stream."""

    stream_id: int = attrs.field(validator=lambda _, __, v: _stream_id(v))
    headers: Headers = ()
    fin: bool = False


@attrs.frozen
class RstStream:
    """RST_STREAM: a stream ended at once, with a status (``RstStatus``)."""

    stream_id: int = attrs.field(validator=lambda _, __, v: _stream_id(v))
    status: int = attrs.field(default=RstStatus.CANCEL, validator=lambda _, __, v: _u32(v))


@attrs.frozen
class SettingsFrame:
    """SETTINGS: connection settings (``Setting`` ids), ``clear`` to forget the persisted ones."""

    entries: tuple[tuple[int, int, int], ...] = ()
    """(id, value, flags) per setting; ids are 24 bits, flags 8."""
    clear: bool = False


@attrs.frozen
class Ping:
    """PING: answered with the same id."""

    ping_id: int = attrs.field(validator=lambda _, __, v: _u32(v))


@attrs.frozen
class GoAway:
    """GOAWAY: no new stream past ``last_good_stream_id``; the connection is ending."""

    last_good_stream_id: int = attrs.field(validator=lambda _, __, v: _stream_id(v))
    status: int = attrs.field(default=GoAwayStatus.OK, validator=lambda _, __, v: _u32(v))


@attrs.frozen
class WindowUpdate:
    """WINDOW_UPDATE: ``delta`` more bytes the sender of the frame will accept."""

    stream_id: int = attrs.field(validator=lambda _, __, v: _stream_id(v))
    """0 is the connection's own window (SPDY/3.1)."""
    delta: int = attrs.field(validator=attrs.validators.in_(range(1, MAX_WINDOW + 1)))


Frame = (
    DataFrame
    | SynStream
    | SynReply
    | HeadersFrame
    | RstStream
    | SettingsFrame
    | Ping
    | GoAway
    | WindowUpdate
)
"""Any SPDY/3.1 frame, as ``FrameReader`` returns and ``FrameWriter`` takes."""


# --- header blocks ----------------------------------------------------------------------------


def encode_header_block(headers: Headers) -> bytes:
    """The uncompressed name/value block; ``ValueError`` for a name that is empty, not lower
    case or repeated."""
    seen: set[str] = set()
    parts = [struct.pack(">I", len(headers))]
    for name, value in headers:
        if not name or name != name.lower() or name in seen:
            raise ValueError(f"header names must be non-empty, lower case and unique: {name!r}")
        seen.add(name)
        raw_name, raw_value = name.encode("latin-1"), value.encode("latin-1")
        parts += [struct.pack(">I", len(raw_name)), raw_name]
        parts += [struct.pack(">I", len(raw_value)), raw_value]
    return b"".join(parts)


def decode_header_block(block: bytes) -> Headers:
    """The pairs of an uncompressed name/value block."""
    view = memoryview(block)
    count, offset = _read_u32(view, 0, "header count")
    if count > MAX_HEADER_PAIRS:
        raise SpdyProtocolError(f"a header block of {count} pairs (at most {MAX_HEADER_PAIRS})")
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for _ in range(count):
        name, offset = _read_string(view, offset, "header name")
        value, offset = _read_string(view, offset, "header value")
        if not name or name != name.lower():
            raise SpdyProtocolError(f"a header name must be non-empty lower case: {name!r}")
        if name in seen:
            raise SpdyProtocolError(f"the header {name!r} is repeated")
        seen.add(name)
        pairs.append((name, value))
    if offset != len(view):
        raise SpdyProtocolError(f"{len(view) - offset} bytes after the header block's pairs")
    return tuple(pairs)


def _read_u32(view: memoryview, offset: int, what: str) -> tuple[int, int]:
    if offset + 4 > len(view):
        raise SpdyProtocolError(f"the header block ends inside its {what}")
    return int.from_bytes(view[offset : offset + 4], "big"), offset + 4


def _read_string(view: memoryview, offset: int, what: str) -> tuple[str, int]:
    length, offset = _read_u32(view, offset, f"{what} length")
    if offset + length > len(view):
        raise SpdyProtocolError(f"the header block ends inside a {what}")
    return bytes(view[offset : offset + length]).decode("latin-1"), offset + length


class _Compressor:
    def __init__(self) -> None:
        self._zlib = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zdict=HEADER_DICTIONARY)

    def compress(self, block: bytes) -> bytes:
        return self._zlib.compress(block) + self._zlib.flush(zlib.Z_SYNC_FLUSH)


class _Decompressor:
    def __init__(self, limit: int) -> None:
        self._zlib = zlib.decompressobj(zdict=HEADER_DICTIONARY)
        self._limit = limit

    def decompress(self, data: bytes) -> bytes:
        try:
            block = self._zlib.decompress(data, self._limit + 1)
        except zlib.error as error:
            raise SpdyProtocolError(f"a header block does not decompress: {error}") from None
        if len(block) > self._limit or self._zlib.unconsumed_tail:
            raise SpdyProtocolError(f"a header block over {self._limit} bytes once decompressed")
        if self._zlib.eof:
            raise SpdyProtocolError("a header block ended the connection's compression stream")
        return block


# --- writing ----------------------------------------------------------------------------------


def _control(kind: FrameType, flags: int, payload: bytes) -> bytes:
    if len(payload) > MAX_LENGTH:
        raise ValueError(f"a frame payload of {len(payload)} bytes (at most {MAX_LENGTH})")
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


class FrameWriter:
    """Frames to bytes, with the sending direction's header compression context: write every
    frame of a connection through one writer, in the order they go out."""

    def __init__(self) -> None:
        self._compressor = _Compressor()

    def _block(self, headers: Headers) -> bytes:
        return self._compressor.compress(encode_header_block(headers))

    def encode(self, frame: Frame) -> bytes:
        """The bytes of ``frame`` (header blocks compressed in this writer's context)."""
        if isinstance(frame, DataFrame):
            if len(frame.data) > MAX_LENGTH:
                raise ValueError(f"a data frame of {len(frame.data)} bytes (at most {MAX_LENGTH})")
            flags = FLAG_FIN if frame.fin else 0
            return struct.pack(">II", frame.stream_id, (flags << 24) | len(frame.data)) + frame.data
        if isinstance(frame, SynStream):
            flags = (FLAG_FIN if frame.fin else 0) | (
                FLAG_UNIDIRECTIONAL if frame.unidirectional else 0
            )
            head = struct.pack(
                ">IIBB", frame.stream_id, frame.associated_to, frame.priority << 5, frame.slot
            )
            return _control(FrameType.SYN_STREAM, flags, head + self._block(frame.headers))
        if isinstance(frame, (SynReply, HeadersFrame)):
            kind = FrameType.SYN_REPLY if isinstance(frame, SynReply) else FrameType.HEADERS
            payload = struct.pack(">I", frame.stream_id) + self._block(frame.headers)
            return _control(kind, FLAG_FIN if frame.fin else 0, payload)
        if isinstance(frame, RstStream):
            payload = struct.pack(">II", frame.stream_id, frame.status)
            return _control(FrameType.RST_STREAM, 0, payload)
        if isinstance(frame, SettingsFrame):
            entries = b"".join(
                struct.pack(">II", ((flags & 0xFF) << 24) | (key & 0xFFFFFF), _u32(value))
                for key, value, flags in frame.entries
            )
            payload = struct.pack(">I", len(frame.entries)) + entries
            return _control(FrameType.SETTINGS, FLAG_CLEAR_SETTINGS if frame.clear else 0, payload)
        if isinstance(frame, Ping):
            return _control(FrameType.PING, 0, struct.pack(">I", frame.ping_id))
        if isinstance(frame, GoAway):
            payload = struct.pack(">II", frame.last_good_stream_id, frame.status)
            return _control(FrameType.GOAWAY, 0, payload)
        payload = struct.pack(">II", frame.stream_id, frame.delta)
        return _control(FrameType.WINDOW_UPDATE, 0, payload)


# --- reading ----------------------------------------------------------------------------------


class FrameReader:
    """Bytes to frames, split anywhere: ``feed`` what arrived and take the frames it completed.
    Holds the receiving direction's header decompression context. A control frame of a type
    SPDY/3.1 does not define (CREDENTIAL, NOOP) is skipped, as the draft says."""

    def __init__(
        self,
        *,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        max_header_block: int = DEFAULT_MAX_HEADER_BLOCK,
    ) -> None:
        self._buffer = bytearray()
        self._max_frame_length = max_frame_length
        self._decompressor = _Decompressor(max_header_block)
        self._broken: SpdyProtocolError | None = None

    def feed(self, data: bytes) -> list[Frame]:
        """The frames ``data`` completes, in order; raises ``SpdyProtocolError`` (then and on
        every later call) once the bytes are not SPDY/3.1."""
        if self._broken is not None:
            raise self._broken
        self._buffer += data
        frames: list[Frame] = []
        try:
            while len(self._buffer) >= 8:
                first, second = struct.unpack_from(">II", self._buffer)
                length = second & 0xFFFFFF
                if length > self._max_frame_length:
                    raise SpdyProtocolError(
                        f"a frame of {length} bytes (at most {self._max_frame_length})"
                    )
                if len(self._buffer) < 8 + length:
                    break
                payload = bytes(self._buffer[8 : 8 + length])
                del self._buffer[: 8 + length]
                frame = self._frame(first, second >> 24, payload)
                if frame is not None:
                    frames.append(frame)
        except SpdyProtocolError as error:
            self._broken = error
            raise
        return frames

    def _frame(self, first: int, flags: int, payload: bytes) -> Frame | None:
        if not first & 0x80000000:
            stream_id = first & MAX_STREAM_ID
            if stream_id == 0:
                raise SpdyProtocolError("a data frame on stream 0")
            return DataFrame(stream_id, payload, bool(flags & FLAG_FIN))
        version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise SpdyProtocolError(f"SPDY version {version}; this end speaks {VERSION}")
        if kind in (FrameType.SYN_STREAM, FrameType.SYN_REPLY, FrameType.HEADERS):
            return self._with_headers(FrameType(kind), flags, payload)
        if kind == FrameType.RST_STREAM:
            stream_id, status = _fixed(payload, "RST_STREAM")
            if stream_id == 0 or status == 0:
                raise SpdyProtocolError("RST_STREAM needs a stream id and a status")
            return RstStream(stream_id, status)
        if kind == FrameType.SETTINGS:
            return _settings(flags, payload)
        if kind == FrameType.PING:
            if len(payload) != 4:
                raise SpdyProtocolError(f"a PING of {len(payload)} bytes (4 expected)")
            return Ping(int.from_bytes(payload, "big"))
        if kind == FrameType.GOAWAY:
            last, status = _fixed(payload, "GOAWAY")
            return GoAway(last, status)
        if kind == FrameType.WINDOW_UPDATE:
            stream_id, delta = _fixed(payload, "WINDOW_UPDATE")
            if not 1 <= delta <= MAX_WINDOW:
                raise SpdyProtocolError(f"a WINDOW_UPDATE delta of {delta}")
            return WindowUpdate(stream_id, delta)
        return None

    def _with_headers(self, kind: FrameType, flags: int, payload: bytes) -> Frame:
        fixed = 10 if kind is FrameType.SYN_STREAM else 4
        if len(payload) < fixed:
            raise SpdyProtocolError(f"a {kind.name} of {len(payload)} bytes")
        stream_id = int.from_bytes(payload[:4], "big") & MAX_STREAM_ID
        if stream_id == 0:
            raise SpdyProtocolError(f"a {kind.name} on stream 0")
        headers = decode_header_block(self._decompressor.decompress(payload[fixed:]))
        fin = bool(flags & FLAG_FIN)
        if kind is FrameType.SYN_STREAM:
            associated = int.from_bytes(payload[4:8], "big") & MAX_STREAM_ID
            return SynStream(
                stream_id,
                headers,
                associated,
                payload[8] >> 5,
                payload[9],
                fin,
                bool(flags & FLAG_UNIDIRECTIONAL),
            )
        if kind is FrameType.SYN_REPLY:
            return SynReply(stream_id, headers, fin)
        return HeadersFrame(stream_id, headers, fin)


def _fixed(payload: bytes, what: str) -> tuple[int, int]:
    if len(payload) != 8:
        raise SpdyProtocolError(f"a {what} of {len(payload)} bytes (8 expected)")
    first, second = struct.unpack(">II", payload)
    return first & MAX_STREAM_ID, second & (0x7FFFFFFF if what == "WINDOW_UPDATE" else 0xFFFFFFFF)


def _settings(flags: int, payload: bytes) -> SettingsFrame:
    if len(payload) < 4:
        raise SpdyProtocolError("a SETTINGS frame without its count")
    count = int.from_bytes(payload[:4], "big")
    if len(payload) != 4 + 8 * count:
        raise SpdyProtocolError(f"a SETTINGS frame of {len(payload)} bytes for {count} entries")
    entries = []
    for offset in range(4, len(payload), 8):
        head, value = struct.unpack_from(">II", payload, offset)
        entries.append((head & 0xFFFFFF, value, head >> 24))
    return SettingsFrame(tuple(entries), bool(flags & FLAG_CLEAR_SETTINGS))
