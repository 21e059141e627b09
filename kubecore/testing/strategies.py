"""Hypothesis strategies for kubecore values, valid by construction.

``pods()`` draws pods of many shapes (1-3 containers, init containers, volumes with mounts that
name them, ports with unique host ports, probes on real ports, resources whose limits are not
below their requests, and an optional status); every one passes ``kubecore.manifest.validate_pod``.
``containers()`` and ``quantities()`` are the building blocks, usable on their own.

Needs the ``hypothesis`` package: ``pip install kubecore[testing]`` (importing this module
without it raises an ``ImportError`` that says so).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import attrs

from kubecore._model import v1 as m

try:
    from hypothesis import strategies as st
except ImportError as missing:
    raise ImportError(
        "kubecore.testing.strategies needs hypothesis, which is not installed: "
        "pip install kubecore[testing]"
    ) from missing

__all__ = ["containers", "dns_labels", "pods", "quantities"]

T = TypeVar("T")
Draw = Callable[[st.SearchStrategy[T]], T]

_LOWER_ALNUM = string.ascii_lowercase + string.digits
IMAGES = (
    "busybox:1.35",
    "busybox",
    "busybox:latest",
    "nginx:1.25-alpine",
    "registry.local:5000/team/app:v2",
    "alpine@sha256:" + "a" * 64,
)
# Printable text plus the characters that trip YAML and JSON writers up.
_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(string.printable),
        st.sampled_from(
            ["\u00e9", "\u4e2d", "\U0001f600", "\t", "\n", "'", '"', ":", "#", "-", "&", "*"]
        ),
    ),
    max_size=12,
)


def dns_labels(max_size: int = 12) -> st.SearchStrategy[str]:
    """DNS-1123 labels: lowercase letters, digits and inner '-'."""
    part = st.text(alphabet=_LOWER_ALNUM, min_size=1, max_size=max(1, max_size // 2 - 1))
    return st.builds(
        lambda a, sep, b: a + sep + b if sep else a,
        part,
        st.sampled_from(("", "-", "--")),
        part,
    )


def _cpu(millis: int) -> st.SearchStrategy[str]:
    forms = [f"{millis}m"]
    if millis % 1000 == 0:
        forms += [str(millis // 1000), f"{millis // 1000}e0"]
    if millis % 100 == 0:
        forms.append(f"{millis // 1000}.{millis % 1000 // 100}")
    return st.sampled_from(forms)


_MEMORY_UNITS: tuple[tuple[str, int], ...] = (
    ("", 1),
    ("k", 1000),
    ("M", 1000**2),
    ("G", 1000**3),
    ("Ki", 1024),
    ("Mi", 1024**2),
    ("Gi", 1024**3),
    ("e3", 1000),
    ("e6", 1000**2),
)


def quantities(
    kind: Literal["cpu", "memory", "any"] = "any",
) -> st.SearchStrategy[str]:
    """Valid, non-negative quantity strings (``250m``, ``0.5``, ``128Mi``, ``1e3``, ...)."""
    cpu = st.integers(0, 64_000).flatmap(_cpu)
    memory = st.builds(
        lambda count, unit: f"{count}{unit[0]}",
        st.integers(0, 4096),
        st.sampled_from(_MEMORY_UNITS),
    )
    if kind == "cpu":
        return cpu
    if kind == "memory":
        return memory
    odd = st.sampled_from(("0", ".5", "1.", "+1", "1.5Gi", "100u", "5n", "1E", "2.5e-3", "1Ei"))
    return st.one_of(cpu, memory, odd)


def _resources(draw: Draw[Any]) -> m.ResourceRequirements:
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if draw(st.booleans()):
        low = draw(st.integers(1, 4000))
        if draw(st.booleans()):
            requests["cpu"] = draw(_cpu(low))
        if draw(st.booleans()):
            limits["cpu"] = draw(_cpu(low + draw(st.integers(0, 4000))))
    if draw(st.booleans()):
        unit = draw(st.sampled_from(_MEMORY_UNITS))[0]
        count = draw(st.integers(1, 512))
        if draw(st.booleans()):
            requests["memory"] = f"{count}{unit}"
        if draw(st.booleans()):
            limits["memory"] = f"{count + draw(st.integers(0, 512))}{unit}"
    if draw(st.booleans()):
        requests["ephemeral-storage"] = draw(quantities("memory"))
    return m.ResourceRequirements(requests=requests, limits=limits)


_COMMAND = st.lists(_TEXT, min_size=1, max_size=3)
_ARGS = st.lists(_TEXT, max_size=3)
_HEADERS = st.lists(
    st.builds(m.HTTPHeader, name=st.sampled_from(("X-Probe", "Accept", "Host")), value=_TEXT),
    max_size=2,
)
_ENV_NAMES = st.lists(
    st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=6), unique=True, max_size=3
)
_FIELD_PATHS = st.sampled_from(
    (
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "metadata.labels['app']",
        "metadata.annotations['example.com/note']",
        "spec.nodeName",
        "status.hostIP",
        "status.podIP",
        "status.podIPs",
    )
)
# References to objects are optional: a drawn pod never waits for a ConfigMap or Secret.
_VALUE_FROM = st.one_of(
    st.builds(m.EnvVarSource, field_ref=st.builds(m.ObjectFieldSelector, field_path=_FIELD_PATHS)),
    st.builds(
        m.EnvVarSource,
        resource_field_ref=st.builds(
            m.ResourceFieldSelector,
            resource=st.sampled_from(("limits.cpu", "requests.memory", "limits.memory")),
            divisor=st.sampled_from(("", "1")),
        ),
    ),
    st.builds(
        m.EnvVarSource,
        config_map_key_ref=st.builds(
            m.ConfigMapKeySelector, key=st.just("key"), name=dns_labels(), optional=st.just(True)
        ),
    ),
    st.builds(
        m.EnvVarSource,
        secret_key_ref=st.builds(
            m.SecretKeySelector, key=st.just("key"), name=dns_labels(), optional=st.just(True)
        ),
    ),
)
_ENV_FROM = st.lists(
    st.one_of(
        st.builds(
            m.EnvFromSource,
            prefix=st.sampled_from(("", "CFG_")),
            config_map_ref=st.builds(
                m.ConfigMapEnvSource, name=dns_labels(), optional=st.just(True)
            ),
        ),
        st.builds(
            m.EnvFromSource,
            secret_ref=st.builds(m.SecretEnvSource, name=dns_labels(), optional=st.just(True)),
        ),
    ),
    max_size=2,
)
_IDS = st.one_of(st.none(), st.sampled_from((0, 1000, 2000, 65534)))
_SECCOMP_PROFILES = st.one_of(
    st.none(),
    st.builds(m.SeccompProfile, type=st.sampled_from(("RuntimeDefault", "Unconfined"))),
    st.just(m.SeccompProfile("Localhost", "profiles/audit.json")),
)
_CAPABILITIES = st.one_of(
    st.none(),
    st.builds(
        m.Capabilities,
        add=st.lists(st.sampled_from(("NET_ADMIN", "CAP_SYS_TIME")), unique=True).map(tuple),
        drop=st.lists(st.sampled_from(("ALL", "NET_RAW")), unique=True).map(tuple),
    ),
)


@st.composite
def _security_context(draw: Draw[Any]) -> m.SecurityContext:
    privileged = draw(st.sampled_from((None, True, False)))
    capabilities = draw(_CAPABILITIES)
    escalation_choices: tuple[bool | None, ...] = (None, True, False)
    if privileged or (capabilities is not None and capabilities.add):
        escalation_choices = (None, True)  # false is invalid with privileged or added caps
    return m.SecurityContext(
        privileged=privileged,
        capabilities=capabilities,
        run_as_user=draw(_IDS),
        run_as_group=draw(_IDS),
        read_only_root_filesystem=draw(st.sampled_from((None, True, False))),
        allow_privilege_escalation=draw(st.sampled_from(escalation_choices)),
        proc_mount=draw(st.sampled_from(("", "Default"))),
        seccomp_profile=draw(_SECCOMP_PROFILES),
    )


_SECURITY_CONTEXTS = st.one_of(st.none(), _security_context())
_POD_SECURITY_CONTEXTS = st.one_of(
    st.none(),
    st.builds(
        m.PodSecurityContext,
        run_as_user=_IDS,
        run_as_group=_IDS,
        supplemental_groups=st.lists(st.sampled_from((3000, 4000)), unique=True).map(tuple),
        fs_group=_IDS,
        fs_group_change_policy=st.sampled_from(("", "Always", "OnRootMismatch")),
        sysctls=st.lists(
            st.builds(
                m.Sysctl,
                name=st.sampled_from(("kernel.shm_rmid_forced", "net.ipv4.tcp_syncookies")),
                value=st.sampled_from(("0", "1")),
            ),
            max_size=2,
            unique_by=lambda s: s.name,
        ).map(tuple),
        seccomp_profile=_SECCOMP_PROFILES,
    ),
)


def _port_ref(port_names: Sequence[str], numbers: Sequence[int]) -> st.SearchStrategy[int | str]:
    choices: list[st.SearchStrategy[int | str]] = [st.integers(1, 65535)]
    if port_names:
        choices.append(st.sampled_from(tuple(port_names)))
    if numbers:
        choices.append(st.sampled_from(tuple(numbers)))
    return st.one_of(choices)


def _handler_fields(
    draw: Draw[Any], port_names: Sequence[str], numbers: Sequence[int]
) -> dict[str, Any]:
    which = draw(st.sampled_from(("exec", "http_get", "tcp_socket")))
    port = _port_ref(port_names, numbers)
    if which == "exec":
        command = draw(_COMMAND)
        return {"exec": m.ExecAction(command=tuple(command))}
    if which == "http_get":
        headers = draw(_HEADERS)
        return {
            "http_get": m.HTTPGetAction(
                port=draw(port),
                path=draw(st.sampled_from(("/", "/healthz", "/index.html", ""))),
                host=draw(st.sampled_from(("", "127.0.0.1"))),
                scheme=draw(st.sampled_from(("HTTP", "HTTPS"))),
                http_headers=tuple(headers),
            )
        }
    return {
        "tcp_socket": m.TCPSocketAction(
            port=draw(port), host=draw(st.sampled_from(("", "localhost")))
        )
    }


def _probe(
    draw: Draw[Any], kind: str, port_names: Sequence[str], numbers: Sequence[int]
) -> m.Probe:
    return m.Probe(
        **_handler_fields(draw, port_names, numbers),
        initial_delay_seconds=draw(st.integers(0, 30)),
        timeout_seconds=draw(st.integers(1, 10)),
        period_seconds=draw(st.integers(1, 60)),
        success_threshold=1 if kind != "readiness" else draw(st.integers(1, 3)),
        failure_threshold=draw(st.integers(1, 10)),
    )


def _container_ports(
    draw: Draw[Any], host_ports: Sequence[int], host_network: bool
) -> list[m.ContainerPort]:
    """The container's ports: one a host port asked for, and up to two (one, with host ports)
    more; on the host's network a host port is also the container's."""
    ports: list[m.ContainerPort] = []
    extra = [0] * draw(st.integers(0, 2 if not host_ports else 1))
    for i, host_port in enumerate([*host_ports, *extra]):
        container_port = host_port if host_network and host_port else draw(st.integers(1, 65535))
        ports.append(
            m.ContainerPort(
                container_port=container_port,
                name=draw(st.sampled_from(("", f"p{i}", f"port-{i}"))),
                host_port=host_port,
                host_ip=draw(st.sampled_from(("", "127.0.0.1"))) if host_port else "",
                protocol=draw(st.sampled_from(("TCP", "UDP", "SCTP"))),
            )
        )
    return ports


def _lifecycle(
    draw: Draw[Any], port_names: Sequence[str], numbers: Sequence[int]
) -> m.Lifecycle | None:
    """Hooks one time in four, each of them or none."""
    if draw(st.integers(0, 3)) != 0:
        return None
    return m.Lifecycle(
        post_start=m.LifecycleHandler(**_handler_fields(draw, port_names, numbers))
        if draw(st.booleans())
        else None,
        pre_stop=m.LifecycleHandler(**_handler_fields(draw, port_names, numbers))
        if draw(st.booleans())
        else None,
    )


def _container(
    draw: Draw[Any],
    name: str,
    *,
    init: bool = False,
    volume_names: Sequence[str] = (),
    host_ports: Sequence[int] = (),
    host_network: bool = False,
) -> m.Container:
    ports = _container_ports(draw, host_ports, host_network)
    port_names = [p.name for p in ports if p.name]
    numbers = [p.container_port for p in ports]

    mounted = (
        draw(st.lists(st.sampled_from(tuple(volume_names)), unique=True)) if volume_names else []
    )
    mounts = tuple(
        m.VolumeMount(name=v, mount_path=f"/mnt/{v}", read_only=draw(st.booleans()))
        for v in mounted
    )
    env_names = draw(_ENV_NAMES)
    env = tuple(
        m.EnvVar(name=n, value=draw(_TEXT))
        if draw(st.booleans())
        else m.EnvVar(name=n, value_from=draw(_VALUE_FROM))
        for n in env_names
    )

    def probe(kind: str) -> m.Probe | None:
        if init or not draw(st.booleans()):
            return None
        made: m.Probe = _probe(draw, kind, port_names, numbers)
        return made

    lifecycle = None if init else _lifecycle(draw, port_names, numbers)
    image = draw(st.sampled_from(IMAGES))
    kwargs: dict[str, Any] = {}
    if draw(st.booleans()):
        kwargs["image_pull_policy"] = draw(st.sampled_from(("Always", "IfNotPresent", "Never")))
    if draw(st.integers(0, 3)) == 0:
        kwargs.update(_restart_fields(draw, init=init))
    return m.Container(
        name=name,
        image=image,
        command=tuple(draw(_ARGS)),
        args=tuple(draw(_ARGS)),
        working_dir=draw(st.sampled_from(("", "/work", "/tmp"))),
        env=env,
        env_from=tuple(draw(_ENV_FROM)),
        ports=tuple(ports),
        volume_mounts=mounts,
        resources=_resources(draw),
        liveness_probe=probe("liveness"),
        readiness_probe=probe("readiness"),
        startup_probe=probe("startup"),
        lifecycle=lifecycle,
        security_context=draw(_SECURITY_CONTEXTS),
        termination_message_path=draw(
            st.sampled_from((m.DEFAULT_TERMINATION_MESSAGE_PATH, "/tmp/termination"))
        ),
        **kwargs,
    )


_EXIT_CODES = st.integers(0, 255)


def _restart_fields(draw: Draw[Any], *, init: bool) -> dict[str, Any]:
    """A container's own restart policy and rules (KEP-5307); an init container gets no
    ``Always`` (that makes a sidecar)."""
    policies = ("OnFailure", "Never") if init else ("Always", "OnFailure", "Never")
    rules = tuple(
        m.ContainerRestartRule(
            action="Restart",
            exit_codes=m.ContainerRestartRuleOnExitCodes(
                operator=draw(st.sampled_from(("In", "NotIn"))),
                values=tuple(draw(st.lists(_EXIT_CODES, unique=True, max_size=3))),
            ),
        )
        for _ in range(draw(st.integers(0, 2)))
    )
    return {"restart_policy": draw(st.sampled_from(policies)), "restart_policy_rules": rules}


@st.composite
def containers(draw: Draw[Any], name: str | None = None) -> m.Container:
    """Valid app containers on their own (no volume mounts, since no pod volumes exist)."""
    return _container(draw, name if name is not None else draw(_DNS_LABEL))


def _volume(draw: Draw[Any], name: str) -> m.Volume:
    if draw(st.booleans()):
        return m.Volume(
            name=name,
            empty_dir=m.EmptyDirVolumeSource(
                medium=draw(st.sampled_from(("", "Memory"))),
                size_limit=draw(st.one_of(st.none(), quantities("memory"))),
            ),
        )
    return m.Volume(
        name=name,
        host_path=m.HostPathVolumeSource(
            path=f"/var/lib/kubecore-test/{name}",
            type=draw(st.sampled_from(("", "DirectoryOrCreate", "Directory"))),
        ),
    )


_DNS_LABEL = dns_labels()
_TIMES = st.sampled_from(("", "2024-01-02T03:04:05Z", "2025-06-30T23:59:59Z"))


_STATES = st.one_of(
    st.just(m.ContainerState()),
    st.builds(
        lambda reason, message: m.ContainerState(
            waiting=m.ContainerStateWaiting(reason=reason, message=message)
        ),
        st.sampled_from(("", "ContainerCreating", "CrashLoopBackOff", "ErrImagePull")),
        _TEXT,
    ),
    st.builds(
        lambda started: m.ContainerState(running=m.ContainerStateRunning(started_at=started)),
        _TIMES,
    ),
    st.builds(
        lambda code, signal, reason, start, end, cid, message: m.ContainerState(
            terminated=m.ContainerStateTerminated(
                exit_code=code,
                signal=signal,
                reason=reason,
                message=message,
                started_at=start,
                finished_at=end,
                container_id=cid,
            )
        ),
        st.integers(0, 255),
        st.sampled_from((0, 9, 15)),
        st.sampled_from(("", "Completed", "Error", "OOMKilled")),
        _TIMES,
        _TIMES,
        st.sampled_from(("", "docker://0123abcd")),
        st.sampled_from(("", "exit status 1\n")),
    ),
)


def _container_status(draw: Draw[Any], container: m.Container) -> m.ContainerStatus:
    return m.ContainerStatus(
        name=container.name,
        image=container.image,
        state=draw(_STATES),
        last_state=draw(_STATES),
        ready=draw(st.booleans()),
        started=draw(st.booleans()),
        restart_count=draw(st.integers(0, 50)),
        image_id=draw(st.sampled_from(("", "docker-pullable://busybox@sha256:" + "b" * 64))),
        container_id=draw(st.sampled_from(("", "docker://0123abcd", "fake://42"))),
    )


def _status(draw: Draw[Any], spec: m.PodSpec) -> m.PodStatus:
    conditions = tuple(
        m.PodCondition(
            type=t,
            status=draw(st.sampled_from(("True", "False", "Unknown"))),
            reason=draw(st.sampled_from(("", "ContainersNotReady", "PodCompleted"))),
            message=draw(_TEXT),
            last_transition_time=draw(_TIMES),
        )
        for t in draw(_CONDITION_TYPES)
    )
    return m.PodStatus(
        phase=draw(st.sampled_from(("Pending", "Running", "Succeeded", "Failed", "Unknown"))),
        conditions=conditions,
        message=draw(_TEXT),
        reason=draw(st.sampled_from(("", "Evicted"))),
        host_ip=draw(st.sampled_from(("", "10.0.0.1"))),
        pod_ip=draw(st.sampled_from(("", "172.17.0.2", "fd00::2"))),
        start_time=draw(_TIMES),
        init_container_statuses=tuple(
            _container_status(draw, c) for c in spec.init_containers if draw(st.booleans())
        ),
        container_statuses=tuple(_container_status(draw, c) for c in spec.containers),
    )


_CONDITION_TYPES = st.lists(
    st.sampled_from(("PodScheduled", "Initialized", "ContainersReady", "Ready")), unique=True
)
_LABEL_KEYS = st.sampled_from(("app", "tier", "example.com/owner", "k8s-app", "release_2"))
_LABEL_VALUES = st.sampled_from(("", "web", "v1.2.3", "a-b_c.d", "x" * 63))


@st.composite
def pods(draw: Draw[Any], *, with_status: bool | None = None) -> m.Pod:
    """Valid pods of many shapes. ``with_status``: always, never, or (``None``) sometimes."""
    n_init = draw(st.integers(0, 2))
    n_app = draw(st.integers(1, 3))
    names = draw(
        st.lists(_DNS_LABEL, min_size=n_init + n_app, max_size=n_init + n_app, unique=True)
    )
    volume_names = draw(st.lists(dns_labels(8), unique=True, max_size=3))
    volumes = tuple(_volume(draw, v) for v in volume_names)
    host_network = draw(st.integers(0, 4)) == 0
    host_ports = draw(st.lists(st.integers(1, 65535), unique=True, max_size=n_app))
    per_container: list[list[int]] = [[] for _ in range(n_app)]
    for port in host_ports:
        per_container[draw(st.integers(0, n_app - 1))].append(port)

    init_containers = tuple(
        _container(draw, name, init=True, volume_names=volume_names) for name in names[:n_init]
    )
    app_containers = tuple(
        _container(
            draw,
            name,
            volume_names=volume_names,
            host_ports=per_container[i],
            host_network=host_network,
        )
        for i, name in enumerate(names[n_init:])
    )
    spec = m.PodSpec(
        containers=app_containers,
        init_containers=init_containers,
        volumes=volumes,
        restart_policy=draw(st.sampled_from(("Always", "OnFailure", "Never"))),
        dns_policy=draw(st.sampled_from(("ClusterFirst", "Default", "ClusterFirstWithHostNet"))),
        host_network=host_network,
        termination_grace_period_seconds=draw(st.sampled_from((0, 1, 5, 30, 120))),
        node_name=draw(st.sampled_from(("", "node-1", "worker.example.com"))),
        image_pull_secrets=tuple(
            m.LocalObjectReference(name=n)
            for n in draw(st.lists(st.sampled_from(("regcred", "other")), unique=True))
        ),
        security_context=draw(_POD_SECURITY_CONTEXTS),
    )
    pod_name = draw(
        st.one_of(_DNS_LABEL, st.builds(lambda a, b: f"{a}.{b}", _DNS_LABEL, _DNS_LABEL))
    )
    metadata = m.ObjectMeta(
        name=pod_name,
        namespace=draw(st.one_of(st.sampled_from(("default", "kube-system")), _DNS_LABEL)),
        uid=draw(st.sampled_from(("", "0d5c6a43-3d4f-4b8b-9b61-5c7c1e2f9a10"))),
        labels=draw(st.dictionaries(_LABEL_KEYS, _LABEL_VALUES, max_size=3)),
        annotations=draw(
            st.dictionaries(
                st.sampled_from(("note", "kubernetes.io/config.source", "example.com/x")),
                _TEXT,
                max_size=2,
            )
        ),
    )
    status = None
    if with_status or (with_status is None and draw(st.booleans())):
        status = _status(draw, spec)
    return attrs.evolve(m.Pod(metadata=metadata, spec=spec), status=status)
