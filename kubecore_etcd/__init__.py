"""kubecore's etcd extra (``kubecore[etcd]``): pods bound to nodes in etcd (``EtcdSource``), their
status written back (``EtcdStatusSink``), the agent's events (``EtcdEventRecorder``).

The key layout is the interface (any etcd client, ``etcdctl put`` included, can bind a pod):

* ``<prefix>/pods/<node>/<namespace>/<name>``: a desired pod, the v1 Pod as JSON or YAML. One
  node watches one prefix and never sees other nodes' traffic.
* ``<prefix>/status/<node>/<namespace>/<name>``: the pod as the agent sees it (v1 Pod JSON with
  ``status``), written by the agent only, apart from the spec so a writer of specs and the agent
  never race.
* ``<prefix>/nodes/<node>``: the node (v1 Node JSON: addresses, capacity, the ``Ready``
  condition, versions) on a lease the agent keeps alive, so a dead agent's key disappears.
* ``<prefix>/events/<namespace>/<name>.<id>``: the agent's events (v1 Event JSON) on a lease
  giving them a TTL (``EtcdEventRecorder``).
* ``<prefix>/configmaps/<namespace>/<name>`` and ``<prefix>/secrets/<namespace>/<name>``: the
  ConfigMaps and Secrets every node reads (``EtcdObjectSource``).

Importing this package does not import the etcd client (``aetcd``): it is loaded when an
``EtcdClient`` is made.

``attach`` joins all of it to an agent (what ``kubecore run --etcd-endpoints`` does); the plugin
(``kubecore_etcd._plugin``, entry point ``etcd``) adds the ``kubecore etcd apply|delete|get``
commands (``kubecore_etcd._cli``).
"""

import logging

from kubecore.server import node_document
from kubecore_etcd._attach import EtcdAttachment, attach, etcd_config
from kubecore_etcd._client import (
    MAX_TXN_OPS,
    EtcdClient,
    EtcdConfig,
    EtcdUnavailable,
    parse_endpoints,
)
from kubecore_etcd._documents import decode_object, decode_pod, load_document
from kubecore_etcd._encoding import encode_json, event_document, status_document
from kubecore_etcd._events import DEFAULT_EVENT_TTL, EtcdEventRecorder
from kubecore_etcd._keys import (
    DEFAULT_PREFIX,
    OBJECT_RESOURCES,
    node_key,
    nodes_prefix,
    object_key,
    objects_prefix,
    pod_key,
    pods_prefix,
    split_key,
    status_key,
    status_prefix,
)
from kubecore_etcd._metrics import EtcdCollector
from kubecore_etcd._sink import DEFAULT_LEASE_REFRESH, DEFAULT_LEASE_TTL, EtcdStatusSink, SinkStats
from kubecore_etcd._source import ETCD_SOURCE, EtcdObjectSource, EtcdSource, bind_pods

__all__ = [
    "DEFAULT_EVENT_TTL",
    "DEFAULT_LEASE_REFRESH",
    "DEFAULT_LEASE_TTL",
    "DEFAULT_PREFIX",
    "ETCD_SOURCE",
    "MAX_TXN_OPS",
    "OBJECT_RESOURCES",
    "EtcdAttachment",
    "EtcdClient",
    "EtcdCollector",
    "EtcdConfig",
    "EtcdEventRecorder",
    "EtcdObjectSource",
    "EtcdSource",
    "EtcdStatusSink",
    "EtcdUnavailable",
    "SinkStats",
    "attach",
    "bind_pods",
    "decode_object",
    "decode_pod",
    "encode_json",
    "etcd_config",
    "event_document",
    "load_document",
    "node_document",
    "node_key",
    "nodes_prefix",
    "object_key",
    "objects_prefix",
    "parse_endpoints",
    "pod_key",
    "pods_prefix",
    "split_key",
    "status_document",
    "status_key",
    "status_prefix",
]

# A library prints nothing unless its host configures logging (see ``kubecore``).
logging.getLogger(__name__).addHandler(logging.NullHandler())
