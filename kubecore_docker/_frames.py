"""Docker's multiplexed stream, read back: a container or exec started without a terminal sends
its stdout and stderr over one connection in frames, each an 8-byte header (the stream's number,
three zero bytes, the payload's size as a big-endian 32-bit integer) and the payload
(moby's ``pkg/stdcopy``).

``FrameReader`` is fed the bytes as they arrive, split anywhere, and hands back the payloads as
soon as they arrive (a large frame is not held until it is complete), in order."""

from __future__ import annotations

import struct

from kubecore import ContainerRuntimeError
from kubecore.runtime import OutputStream

HEADER_SIZE = 8
_HEADER = struct.Struct(">B3xI")

_STDIN, _STDOUT, _STDERR, _SYSTEMERR = 0, 1, 2, 3
_STREAMS = {
    # moby's stdcopy writes a stdin frame where it writes stdout.
    _STDIN: OutputStream.STDOUT,
    _STDOUT: OutputStream.STDOUT,
    _STDERR: OutputStream.STDERR,
    # The engine's own error in the middle of a stream: what a client shows on stderr.
    _SYSTEMERR: OutputStream.STDERR,
}


def encode_frame(stream: int, payload: bytes) -> bytes:
    """One frame as the engine writes it (for tests and for the reader's own checks)."""
    return _HEADER.pack(stream, len(payload)) + payload


class FrameReader:
    """An incremental reader of Docker's multiplexed stream."""

    def __init__(self) -> None:
        self._header = bytearray()
        self._stream = OutputStream.STDOUT
        self._remaining = 0

    @property
    def mid_frame(self) -> bool:
        """True if the bytes fed so far end inside a frame (a connection cut there lost data)."""
        return bool(self._header) or self._remaining > 0

    def feed(self, data: bytes) -> list[tuple[OutputStream, bytes]]:
        """The payload bytes in ``data``, by stream, in order. Raises ``ContainerRuntimeError``
        on a header no engine writes (the stream is then unusable)."""
        chunks: list[tuple[OutputStream, bytes]] = []
        view = memoryview(data)
        while view:
            if self._remaining:
                taken = view[: self._remaining]
                self._remaining -= len(taken)
                view = view[len(taken) :]
                chunks.append((self._stream, bytes(taken)))
                continue
            wanted = HEADER_SIZE - len(self._header)
            self._header += view[:wanted]
            view = view[wanted:]
            if len(self._header) == HEADER_SIZE:
                self._stream, self._remaining = _parse_header(bytes(self._header))
                self._header.clear()
        return _merged(chunks)


def _parse_header(header: bytes) -> tuple[OutputStream, int]:
    stream, size = _HEADER.unpack(header)
    if stream not in _STREAMS or header[1:4] != b"\0\0\0":
        raise ContainerRuntimeError(
            f"the engine's output stream is corrupt: frame header {header.hex()} "
            f"(stream {stream}) is not one Docker writes"
        )
    return _STREAMS[stream], size


def _merged(chunks: list[tuple[OutputStream, bytes]]) -> list[tuple[OutputStream, bytes]]:
    """Adjacent chunks of one stream as one (many small frames read at once)."""
    merged: list[tuple[OutputStream, bytes]] = []
    for stream, payload in chunks:
        if not payload:
            continue
        if merged and merged[-1][0] is stream:
            merged[-1] = (stream, merged[-1][1] + payload)
        else:
            merged.append((stream, payload))
    return merged
