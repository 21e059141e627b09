"""How ``kubecore run --help`` is laid out: its flags in groups, as the kubelet's reference
groups its own (where pods come from, the node and its runtime, the API and what it lets pods
do, housekeeping, logging), and examples after them."""

from __future__ import annotations

RUN_FLAG_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "pod sources",
        "where the pods come from: manifest files, a URL, etcd",
        (
            "manifests",
            "manifest_url",
            "file_check_interval",
            "manifest_may_be_missing",
            "manifest_allow_empty",
            "manifest_settle",
            "manifest_in_place_settle",
            "http_check_interval",
            "etcd_endpoints",
            "etcd_prefix",
            "etcd_cafile",
            "etcd_certfile",
            "etcd_keyfile",
            "etcd_user",
        ),
    ),
    (
        "node and runtime",
        "the node, the container runtime it drives and how often it syncs",
        (
            "node_name",
            "root_dir",
            "runtime",
            "runtime_option",
            "sandbox_image",
            "registry_config",
            "pull_qps",
            "pull_burst",
            "max_pods",
            "workers",
            "resync",
            "relist_interval",
            "backoff_initial",
            "backoff_max",
            "host_ip",
            "node_labels",
            "pvc_dir",
            "cluster_dns",
            "cluster_domain",
            "resolv_conf",
        ),
    ),
    (
        "API and security",
        "the HTTP API (kubectl's and the kubelet endpoints) and what pods may do",
        (
            "address",
            "port",
            "api_token_file",
            "anonymous_reads",
            "tls_cert_file",
            "tls_private_key_file",
            "max_connections",
            "max_connections_per_client",
            "enable_exec",
            "exec_token_file",
            "log_dir",
            "pod_security",
            "allow_privileged",
            "allowed_unsafe_sysctls",
            "allowed_host_path",
            "allowed_host_port",
        ),
    ),
    (
        "housekeeping and eviction",
        "garbage collection of containers and images, events kept, eviction",
        (
            "housekeeping_interval",
            "container_gc_interval",
            "gc_max_dead_per_container",
            "gc_min_age",
            "image_gc_interval",
            "image_gc_high",
            "image_gc_low",
            "image_min_age",
            "max_events",
            "eviction_hard",
        ),
    ),
    (
        "logging",
        "the agent's own log and the containers' log files",
        ("log_level", "container_log_max_size", "container_log_max_files"),
    ),
    (
        "running once",
        "sync, print the pod table and exit (for scripts and CI)",
        ("once", "deadline"),
    ),
)
"""(title, what the group holds, the settings in it by ``dest``): every setting of
``RUN_SETTINGS`` is in exactly one group (a test says so)."""

RUN_EXAMPLES = """\
examples:
  kubecore run examples/pods --runtime fake --once
      converge the example pods on the in-memory runtime, print the pod table and exit
  kubecore run /etc/kubecore/pods --runtime docker --node-name node-1
      keep the manifests' pods running on Docker, the API on 127.0.0.1:10250
  kubecore run pods/ --runtime cri --runtime-option endpoint=unix:///run/containerd/containerd.sock
      the same on containerd, through its CRI socket
  kubecore run --config node.yaml
      every flag from a YAML file (keys named like the flags)
"""
"""The epilog of ``kubecore run --help``."""
