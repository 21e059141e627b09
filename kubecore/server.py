"""The agent's HTTP API (``/healthz``, ``/pods``, container logs, ``/metrics``, stats), its
Prometheus metrics, and the node facts a control-plane link reports (labels, architecture,
memory) with the rate limiter it sends under."""

import typing as _typing

from kubecore._util.exports import lazy_namespace as _lazy_namespace

if _typing.TYPE_CHECKING:  # written by scripts/gen_exports.py from kubecore._util.exports.SURFACE
    from kubecore._agent.admission.node_fit import (
        machine_arch as machine_arch,
    )
    from kubecore._agent.admission.node_fit import (
        node_labels as node_labels,
    )
    from kubecore._agent.admission.node_fit import (
        parse_node_labels as parse_node_labels,
    )
    from kubecore._agent.facets import (
        KubeletStreams as KubeletStreams,
    )
    from kubecore._agent.facets import (
        KubeletViews as KubeletViews,
    )
    from kubecore._api.nodes import (
        node_document as node_document,
    )
    from kubecore._http.server import (
        KubeletServer as KubeletServer,
    )
    from kubecore._http.server import (
        ServerConfig as ServerConfig,
    )
    from kubecore._http.server import (
        serve as serve,
    )
    from kubecore._kuberuntime.env import (
        host_capacity as host_capacity,
    )
    from kubecore._observability.metrics import (
        Metrics as Metrics,
    )
    from kubecore._util.ratelimit import (
        TokenBucket as TokenBucket,
    )

__all__, __getattr__, __dir__ = _lazy_namespace(__name__)
