"""The SPDY/3.1 connection: streams both ways, flow control (large transfers neither stall nor
overrun), the bounded buffer without it, pings, resets and the stream limit."""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading

import pytest

from kubecore._contract.errors import SpdyClosed
from kubecore._streaming.spdy import RstStatus
from kubecore._streaming.spdy_connection import INITIAL_WINDOW, SpdyStream
from tests.unit.streaming.spdy_support import connected, read_all

WAIT = 20.0


def echo_accept(stream: SpdyStream) -> None:
    stream.reply()

    def run() -> None:
        while chunk := stream.read():
            stream.write(chunk)
        stream.close()

    threading.Thread(target=run, daemon=True).start()


def test_a_large_transfer_both_ways_with_flow_control() -> None:
    payload = os.urandom(4 * 1024 * 1024 + 17)
    with connected(echo_accept) as (client, server):
        assert client.flow_control and server.flow_control
        stream = client.open_stream((("kind", "echo"),))
        sender = threading.Thread(target=lambda: (stream.write(payload), stream.close()))
        sender.start()
        received = read_all(stream)
        sender.join(WAIT)
        assert hashlib.sha256(received).digest() == hashlib.sha256(payload).digest()
        assert stream.reset_status is None


def test_without_flow_control_a_slow_reader_holds_a_bounded_buffer() -> None:
    streams: queue.Queue[SpdyStream] = queue.Queue()

    def accept(stream: SpdyStream) -> None:
        stream.reply()
        streams.put(stream)

    payload = b"z" * (2 * 1024 * 1024)
    with connected(accept, flow_control=False, buffer_bytes=100_000, client_flow_control=False) as (
        client,
        _,
    ):
        stream = client.open_stream(())
        sender = threading.Thread(target=lambda: (stream.write(payload), stream.close()))
        sender.start()
        peer = streams.get(timeout=WAIT)
        most = 0
        total = 0
        while chunk := peer.read(4096):
            total += len(chunk)
            most = max(most, peer.buffered)
        sender.join(WAIT)
        assert total == len(payload)
        assert most <= 100_000 + 32 * 1024  # the limit, and the frame that reached it


def test_data_beyond_the_window_is_refused() -> None:
    streams: queue.Queue[SpdyStream] = queue.Queue()

    def accept(stream: SpdyStream) -> None:
        stream.reply()
        streams.put(stream)  # never read: the window is never handed back

    with connected(accept, client_flow_control=False) as (client, _):
        stream = client.open_stream(())
        peer = streams.get(timeout=WAIT)
        # A peer that ignores windows overruns the 64 KiB it was given: the stream is reset.
        with contextlib.suppress(SpdyClosed):
            for _ in range(200):
                stream.write(b"x" * 1024)
        _wait(lambda: stream.reset_status is not None)
        assert stream.reset_status == RstStatus.FLOW_CONTROL_ERROR
        assert peer.reset_status == RstStatus.FLOW_CONTROL_ERROR
        assert peer.buffered <= INITIAL_WINDOW


def test_a_smaller_initial_window_is_honoured() -> None:
    with connected(echo_accept, receive_window=1024) as (client, _):
        _wait(lambda: client.initial_send_window == 1024)
        stream = client.open_stream(())
        payload = os.urandom(300_000)
        sender = threading.Thread(target=lambda: (stream.write(payload), stream.close()))
        sender.start()
        assert read_all(stream) == payload
        sender.join(WAIT)


def test_streams_the_peer_opens_past_the_limit_are_refused() -> None:
    accepted: list[SpdyStream] = []

    def accept(stream: SpdyStream) -> None:
        stream.reply()
        accepted.append(stream)

    with connected(accept, max_streams=3) as (client, _):
        streams = [client.open_stream(()) for _ in range(5)]
        _wait(lambda: all(s.replied.is_set() or s.reset_status for s in streams))
        assert [s.reset_status for s in streams] == [None] * 3 + [RstStatus.REFUSED_STREAM] * 2
        assert len(accepted) == 3


def test_no_accept_refuses_and_pings_are_answered() -> None:
    with connected(None) as (client, _):
        stream = client.open_stream(())
        _wait(lambda: stream.reset_status is not None)
        assert stream.reset_status == RstStatus.REFUSED_STREAM
        client.ping()  # the server echoes it; the client takes the echo as its answer
        other = client.open_stream(())
        _wait(lambda: other.reset_status is not None)


def test_a_reset_ends_the_peers_reads_and_writes() -> None:
    streams: queue.Queue[SpdyStream] = queue.Queue()

    def accept(stream: SpdyStream) -> None:
        stream.reply()
        streams.put(stream)

    with connected(accept) as (client, _):
        stream = client.open_stream(())
        peer = streams.get(timeout=WAIT)
        stream.write(b"before")
        assert peer.read() == b"before"
        stream.reset()
        assert peer.read() == b""
        _wait(lambda: peer.reset_status == RstStatus.CANCEL)
        with pytest.raises(SpdyClosed):
            peer.write(b"after")


def test_the_connection_ending_ends_every_stream() -> None:
    streams: queue.Queue[SpdyStream] = queue.Queue()

    def accept(stream: SpdyStream) -> None:
        stream.reply()
        streams.put(stream)

    with connected(accept) as (client, server):
        client.open_stream(())
        peer = streams.get(timeout=WAIT)
        client.close()
        assert peer.read() == b""
        _wait(server.closed.is_set)
        with pytest.raises(SpdyClosed):
            client.open_stream(())


def _wait(condition: object, timeout: float = WAIT) -> None:
    done = threading.Event()
    deadline = threading.Timer(timeout, done.set)
    deadline.start()
    try:
        while not done.is_set():
            if condition():  # type: ignore[operator]
                return
            done.wait(0.01)
        raise AssertionError(f"timed out waiting for {condition}")
    finally:
        deadline.cancel()
