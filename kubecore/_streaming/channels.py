"""The ``channel.k8s.io`` WebSocket subprotocols of ``kubectl exec`` and ``attach``, as pure
framing: each message is one channel's bytes, its first byte the channel (0 stdin, 1 stdout,
2 stderr, 3 the error channel, 4 terminal resizes; ``v5`` adds 255, a close of the channel its
payload names). The ``base64`` variants send text messages: the channel as an ASCII digit, then
the bytes in base64.

What each subprotocol sends on the error channel when the command ends: from ``v4`` on a v1
``Status`` in JSON (``Success``, or ``Failure`` with reason ``NonZeroExitCode`` and the code in
``details.causes``, which kubectl exits with); before it, only a failure's message as text.
Resize messages carry JSON ``{"Width": .., "Height": ..}`` objects.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from collections.abc import Sequence
from typing import Any

import attrs

from kubecore._contract.streaming import TerminalSize


class Channel(enum.IntEnum):
    STDIN = 0
    STDOUT = 1
    STDERR = 2
    ERROR = 3
    RESIZE = 4
    CLOSE = 255
    """``v5`` only: close the channel named by the payload's first byte (stdin: end of input)."""


@attrs.frozen
class Dialect:
    """What one subprotocol's messages look like."""

    name: str
    base64: bool = False
    """Text messages, the channel as a digit and the data in base64."""
    json_status: bool = True
    """The error channel carries a v1 ``Status`` in JSON (``v4`` and later)."""
    closes: bool = False
    """Channel 255 closes a channel (``v5``)."""


DIALECTS: tuple[Dialect, ...] = (
    Dialect("v5.channel.k8s.io", closes=True),
    Dialect("v4.channel.k8s.io"),
    Dialect("v4.base64.channel.k8s.io", base64=True),
    Dialect("channel.k8s.io", json_status=False),
    Dialect("base64.channel.k8s.io", base64=True, json_status=False),
)
"""The subprotocols served, in the server's order of preference."""
PROTOCOL_NAMES: tuple[str, ...] = tuple(d.name for d in DIALECTS)
_BY_NAME = {d.name: d for d in DIALECTS}


def dialect(name: str) -> Dialect:
    """The dialect of subprotocol ``name`` (one of ``PROTOCOL_NAMES``)."""
    return _BY_NAME[name]


class FrameError(ValueError):
    """A message that is not a frame of the subprotocol."""


@attrs.frozen
class Frame:
    channel: int
    data: bytes


def encode(dialect: Dialect, channel: int, data: bytes) -> bytes | str:
    """One message: bytes for a binary dialect, text for a ``base64`` one."""
    if dialect.base64:
        return chr(ord("0") + channel) + base64.b64encode(data).decode("ascii")
    return bytes((channel,)) + data


def decode(dialect: Dialect, message: bytes) -> Frame | None:
    """The frame a message carries; None for an empty message (which is ignored, as upstream
    ignores one). Raises ``FrameError`` for one the dialect cannot carry."""
    if not message:
        return None
    if not dialect.base64:
        return Frame(message[0], message[1:])
    channel = message[0] - ord("0")
    if not 0 <= channel <= 9:
        raise FrameError(f"a base64 frame starts with a channel digit, not {message[:1]!r}")
    try:
        data = base64.b64decode(message[1:], validate=True)
    except (binascii.Error, ValueError):
        raise FrameError(f"channel {channel}: the data is not valid base64") from None
    return Frame(channel, data)


def closed_channel(frame: Frame) -> int | None:
    """The channel a ``v5`` close frame closes (None for a close frame without one)."""
    return frame.data[0] if frame.data else None


# --- the error channel ------------------------------------------------------------------------


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(code: int, command: Sequence[str]) -> dict[str, Any]:
    """The kubelet's ``Status`` for a command that exited with ``code`` (0: success)."""
    if code == 0:
        return success_status()
    return {
        "metadata": {},
        "status": "Failure",
        "message": (
            "command terminated with non-zero exit code: error executing command "
            f"{list(command)}, exit code {code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def internal_status(message: str) -> dict[str, Any]:
    """A failure that is not the command's (``apierrors.NewInternalError``)."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def status_payload(dialect: Dialect, status: dict[str, Any]) -> bytes | None:
    """What the error channel carries for ``status`` (None: nothing, a success before ``v4``)."""
    if dialect.json_status:
        return json.dumps(status, separators=(",", ":")).encode()
    if status.get("status") == "Success":
        return None
    return str(status.get("message", "")).encode()


# --- the resize channel -----------------------------------------------------------------------


def read_resizes(data: bytes) -> list[TerminalSize]:
    """The sizes in one resize message: one or more JSON objects, blanks between them (kubectl
    sends one a message); raises ``FrameError`` for anything else."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FrameError("a resize message is not UTF-8 JSON") from None
    decoder = json.JSONDecoder()
    sizes: list[TerminalSize] = []
    position = 0
    while True:
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
        if position == len(text):
            return sizes
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise FrameError(f"a resize message is not JSON: {error.msg}") from None
        except RecursionError:
            raise FrameError("a resize message is not JSON: nested too deep") from None
        sizes.append(terminal_size(value))


def terminal_size(value: object) -> TerminalSize:
    """A ``{"Width": .., "Height": ..}`` object as a ``TerminalSize`` (0..65535 each, as the
    uint16 fields of client-go's ``TerminalSize``)."""
    if not isinstance(value, dict):
        raise FrameError("a resize message must be a JSON object")
    numbers = [value.get("Width", 0), value.get("Height", 0)]
    for number in numbers:
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= 65535:
            raise FrameError(f"a terminal size must be a number in 0..65535, got {number!r}")
    return TerminalSize(numbers[0], numbers[1])
