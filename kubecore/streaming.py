"""SPDY/3.1 for a runtime plugin that streams as the kubelet's runtimes do: the sans-IO framer
(``FrameWriter`` turns frames into bytes, ``FrameReader`` bytes into frames) and its frame types,
and ``SpdyConnection``, streams opened by either side over a byte transport. A CRI runtime's
streaming server (containerd's ``exec``, ``attach`` and ``port-forward`` URLs) speaks it; the
``cri`` plugin's streams are built on it."""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._contract.errors import (
        SpdyClosed as SpdyClosed,
    )
    from kubecore._contract.errors import (
        SpdyProtocolError as SpdyProtocolError,
    )
    from kubecore._streaming.spdy import (
        DataFrame as DataFrame,
    )
    from kubecore._streaming.spdy import (
        Frame as Frame,
    )
    from kubecore._streaming.spdy import (
        FrameReader as FrameReader,
    )
    from kubecore._streaming.spdy import (
        FrameWriter as FrameWriter,
    )
    from kubecore._streaming.spdy import (
        GoAway as GoAway,
    )
    from kubecore._streaming.spdy import (
        GoAwayStatus as GoAwayStatus,
    )
    from kubecore._streaming.spdy import (
        Headers as Headers,
    )
    from kubecore._streaming.spdy import (
        HeadersFrame as HeadersFrame,
    )
    from kubecore._streaming.spdy import (
        Ping as Ping,
    )
    from kubecore._streaming.spdy import (
        RstStatus as RstStatus,
    )
    from kubecore._streaming.spdy import (
        RstStream as RstStream,
    )
    from kubecore._streaming.spdy import (
        SettingsFrame as SettingsFrame,
    )
    from kubecore._streaming.spdy import (
        SynReply as SynReply,
    )
    from kubecore._streaming.spdy import (
        SynStream as SynStream,
    )
    from kubecore._streaming.spdy import (
        WindowUpdate as WindowUpdate,
    )
    from kubecore._streaming.spdy_connection import (
        SpdyConnection as SpdyConnection,
    )
    from kubecore._streaming.spdy_connection import (
        SpdyStream as SpdyStream,
    )
    from kubecore._streaming.spdy_connection import (
        Transport as Transport,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
