"""securityContext, pod and container level: decoding, validation, the runtime's view of it,
admission, runAsNonRoot and fsGroup (all on the in-memory runtime; Docker in
tests/engines/docker)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import attrs
import pytest

from kubecore import KubeletConfig, Pod, ValidationError, load_pods_from_string
from kubecore._agent.admission.admit import Admission
from kubecore._cli import resolve_settings
from kubecore._cli.commands import kubelet_config
from kubecore._kuberuntime.security import (
    HostSecurity,
    detect_host_security,
    run_as_non_root_problem,
)
from kubecore._kuberuntime.translate import container_config, sandbox_config
from kubecore._model.spec_hash import container_hash, sandbox_hash
from kubecore._volumes.pod_dirs import VolumeManager
from kubecore.manifest import pod_to_dict
from kubecore.runtime import (
    Capability,
    Image,
    InvalidConfig,
    LinuxContainerSecurityContext,
    ProfileType,
    SecurityProfile,
    SELinuxOption,
    parse_image_user,
)
from kubecore.testing import FakeNode
from kubecore.v1 import ContainerStatus, PodSecurityContext, SecurityContext, Sysctl
from kubecore_docker._security import EngineSecurity, security_args
from kubecore_fake import FakeRuntime
from tests.builders import ctr, make_pod
from tests.cli.support import parsed_flags
from tests.paths import CORPUS

SECCOMP_ROOT = "/var/lib/kubecore/seccomp"


def one_pod(text: str) -> Pod:
    (pod,) = load_pods_from_string(text)
    return pod


def pod_yaml(pod_sc: str = "", container_sc: str = "", extra: str = "") -> str:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u1}\nspec:\n"
    if pod_sc:
        text += f"  securityContext: {pod_sc}\n"
    text += extra
    text += "  containers:\n  - name: c\n    image: busybox:1.36\n"
    if container_sc:
        text += f"    securityContext: {container_sc}\n"
    return text


def config_of(pod: Pod, **kw: object) -> LinuxContainerSecurityContext | None:
    config = container_config(
        pod, pod.spec.containers[0], restart_count=0, volume_paths={}, seccomp_root=SECCOMP_ROOT,
        **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    return config.security_context


def problems(text: str) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        load_pods_from_string(text)
    return {p.path: p.message for p in caught.value.problems}


# --- decoding and validation -------------------------------------------------------------


def test_every_field_reads_and_writes_back() -> None:
    text = pod_yaml(
        "{runAsUser: 0, runAsGroup: 0, runAsNonRoot: false, supplementalGroups: [4000],"
        " supplementalGroupsPolicy: Merge, fsGroup: 2000, fsGroupChangePolicy: OnRootMismatch,"
        " sysctls: [{name: kernel.shm_rmid_forced, value: '1'}],"
        " seccompProfile: {type: Localhost, localhostProfile: profiles/audit.json},"
        " appArmorProfile: {type: RuntimeDefault}}",
        "{capabilities: {add: [NET_ADMIN], drop: [ALL]}, readOnlyRootFilesystem: true,"
        " allowPrivilegeEscalation: false, procMount: Default, runAsUser: 1000,"
        " seccompProfile: {type: Unconfined}}",
    )
    pod = one_pod(text)
    pod_sc = pod.spec.security_context
    assert pod_sc is not None and pod_sc.run_as_user == 0 and pod_sc.fs_group == 2000
    assert pod_sc.sysctls == (Sysctl("kernel.shm_rmid_forced", "1"),)
    sc = pod.spec.containers[0].security_context
    assert sc is not None and sc.capabilities is not None and sc.capabilities.drop == ("ALL",)
    dumped = pod_to_dict(pod)
    assert dumped["spec"]["securityContext"]["runAsUser"] == 0  # 0 is root, not "unset"
    assert dumped["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] is False
    (again,) = load_pods_from_string(json.dumps(dumped))
    assert again == pod


@pytest.mark.parametrize(
    ("pod_sc", "container_sc", "extra", "path", "words"),
    [
        (
            "",
            "{windowsOptions: {runAsUserName: x}}",
            "",
            "containers[0].securityContext.windowsOptions",
            "Linux node",
        ),
        (
            "{windowsOptions: {hostProcess: true}}",
            "",
            "",
            "spec.securityContext.windowsOptions",
            "Linux node",
        ),
        ("", "{procMount: Unmasked}", "", "containers[0].securityContext.procMount", "hostUsers"),
        (
            "",
            "{procMount: Weird}",
            "",
            "containers[0].securityContext.procMount",
            "Default, Unmasked",
        ),
        (
            "",
            "{privileged: true, allowPrivilegeEscalation: false}",
            "",
            "allowPrivilegeEscalation",
            "privileged",
        ),
        (
            "",
            "{capabilities: {add: [CAP_SYS_ADMIN]}, allowPrivilegeEscalation: false}",
            "",
            "allowPrivilegeEscalation",
            "CAP_SYS_ADMIN",
        ),
        ("{runAsUser: -1}", "", "", "spec.securityContext.runAsUser", "between 0 and"),
        (
            "{seccompProfile: {type: Localhost}}",
            "",
            "",
            "seccompProfile.localhostProfile",
            "required",
        ),
        (
            "{seccompProfile: {type: Localhost, localhostProfile: ../etc/x.json}}",
            "",
            "",
            "seccompProfile.localhostProfile",
            "relative",
        ),
        (
            "{seccompProfile: {type: RuntimeDefault, localhostProfile: x}}",
            "",
            "",
            "seccompProfile.localhostProfile",
            "Localhost",
        ),
        ("", "{appArmorProfile: {type: Nope}}", "", "appArmorProfile.type", "RuntimeDefault"),
        (
            "{sysctls: [{name: a.b, value: '1'}, {name: a.b, value: '2'}]}",
            "",
            "",
            "sysctls[1].name",
            "duplicate",
        ),
        ("{sysctls: [{name: 'Bad Name', value: '1'}]}", "", "", "sysctls[0].name", "invalid"),
        ("{supplementalGroupsPolicy: Loose}", "", "", "supplementalGroupsPolicy", "Merge, Strict"),
        ("{fsGroupChangePolicy: Never}", "", "", "fsGroupChangePolicy", "OnRootMismatch"),
    ],
)
def test_what_validation_refuses(
    pod_sc: str, container_sc: str, extra: str, path: str, words: str
) -> None:
    found = problems(pod_yaml(pod_sc, container_sc, extra))
    matching = {p: msg for p, msg in found.items() if p.endswith(path)}
    assert matching, found
    assert any(words in message for message in matching.values()), matching


def test_the_corpus_validates() -> None:
    files = sorted(CORPUS.glob("security-*.yaml"))
    assert len(files) >= 9
    for path in files:
        assert load_pods_from_string(path.read_text()), path


# --- the effective security context, as the runtime receives it ----------------------------


def test_a_pod_without_security_context_keeps_todays_config_and_hashes() -> None:
    pod = make_pod("web", ctr("app"))
    assert config_of(pod) is None
    config = sandbox_config(pod, 0, dns=None)
    assert config.sysctls == {}
    hash_before = "7a1c04e0a3eb6875"  # the hash of this container before securityContext grew
    assert container_hash(pod.spec.containers[0]) == hash_before
    privileged = attrs.evolve(ctr("app"), security_context=SecurityContext(privileged=True))
    assert container_hash(privileged) == "20c52d4212f476d1"
    assert sandbox_hash(make_pod("web", ctr("app"))) == sandbox_hash(pod)
    changed = make_pod("web", ctr("app"), security_context=PodSecurityContext(run_as_user=5))
    assert sandbox_hash(changed) != sandbox_hash(pod)


def test_container_values_override_the_pods() -> None:
    pod = one_pod(
        pod_yaml(
            "{runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000, 2000],"
            " seccompProfile: {type: RuntimeDefault}}",
            "{runAsUser: 2000, seccompProfile: {type: Localhost, localhostProfile: p/a.json}}",
        )
    )
    assert config_of(pod) == LinuxContainerSecurityContext(
        run_as_user=2000,
        run_as_group=3000,
        supplemental_groups=(2000, 4000),  # fsGroup first, no duplicate
        seccomp=SecurityProfile(ProfileType.LOCALHOST, f"{SECCOMP_ROOT}/p/a.json"),
    )


def test_capabilities_read_only_root_and_no_new_privileges() -> None:
    pod = one_pod(
        pod_yaml(
            container_sc="{capabilities: {add: [NET_ADMIN, CAP_SYS_TIME], drop: [ALL]},"
            " readOnlyRootFilesystem: true, allowPrivilegeEscalation: false}"
        )
    )
    sc = config_of(pod)
    assert sc is not None
    assert sc.capabilities == Capability(("NET_ADMIN", "CAP_SYS_TIME"), ("ALL",))
    assert sc.readonly_rootfs and sc.no_new_privs


@pytest.mark.parametrize("value", ["true", "null"])
def test_privilege_escalation_is_allowed_unless_set_false(value: str) -> None:
    pod = one_pod(pod_yaml(container_sc=f"{{allowPrivilegeEscalation: {value}}}"))
    assert config_of(pod) is None


def test_a_group_without_a_user_takes_the_images_user() -> None:
    pod = one_pod(pod_yaml("{runAsGroup: 3000}"))
    assert config_of(pod, image=Image("sha256:1", uid=1000)).run_as_user == 1000  # type: ignore[union-attr]
    named = config_of(pod, image=Image("sha256:1", username="nobody"))
    assert named is not None and (named.run_as_user, named.run_as_username) == (None, "nobody")
    root = config_of(pod, image=Image("sha256:1"))
    assert root is not None and root.run_as_user == 0


def test_the_legacy_apparmor_annotation_is_honoured() -> None:
    pod = one_pod(
        pod_yaml().replace(
            "metadata: {name: p, uid: u1}",
            "metadata: {name: p, uid: u1, annotations:"
            " {container.apparmor.security.beta.kubernetes.io/c: localhost/deny-write}}",
        )
    )
    sc = config_of(pod)
    assert sc is not None and sc.apparmor == SecurityProfile(ProfileType.LOCALHOST, "deny-write")


def test_sysctls_go_to_the_sandbox() -> None:
    pod = one_pod(
        pod_yaml("{sysctls: [{name: net.ipv4.ip_local_port_range, value: '1024 65000'}]}")
    )
    assert sandbox_config(pod, 0, dns=None).sysctls == {
        "net.ipv4.ip_local_port_range": "1024 65000"
    }


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        ("", (None, "")),
        ("1000", (1000, "")),
        ("1000:50", (1000, "")),
        ("nobody:x", (None, "nobody")),
    ],
)
def test_parse_image_user(user: str, expected: tuple[int | None, str]) -> None:
    assert parse_image_user(user) == expected


# --- runAsNonRoot ------------------------------------------------------------------------


def test_run_as_non_root_messages_are_the_kubelets() -> None:
    pod = one_pod(pod_yaml("{runAsNonRoot: true}"))
    c = pod.spec.containers[0]
    assert "image will run as root" in (run_as_non_root_problem(pod, c, Image("x")) or "")
    assert "image will run as root" in (run_as_non_root_problem(pod, c, Image("x", uid=0)) or "")
    named = run_as_non_root_problem(pod, c, Image("x", username="app"))
    assert named is not None and "image has non-numeric user (app), cannot verify" in named
    assert run_as_non_root_problem(pod, c, Image("x", uid=1000)) is None
    as_root = one_pod(pod_yaml("{runAsNonRoot: true, runAsUser: 0}"))
    message = run_as_non_root_problem(as_root, as_root.spec.containers[0], None)
    assert message is not None and "runAsUser breaks non-root policy" in message


def waiting_of(status: ContainerStatus) -> tuple[str, str]:
    waiting = status.state.waiting
    return (waiting.reason, waiting.message) if waiting else ("", "")


def test_run_as_non_root_against_the_image_user_on_a_node(tmp_path: Path) -> None:
    with FakeNode(tmp_path) as node:
        node.runtime.add_image("busybox:1.36", pulled=True)
        node.runtime.add_image("app/nonroot:1", user="1000", pulled=True)
        node.runtime.add_image("app/named:1", user="app", pulled=True)
        root = one_pod(pod_yaml("{runAsNonRoot: true}"))
        node.apply(
            [
                root,
                _renamed(root, "numeric", "app/nonroot:1"),
                _renamed(root, "named", "app/named:1"),
            ]
        )
        node.run_until(lambda: node.status("numeric").phase == "Running")
        node.run_until(lambda: node.status("p").container_statuses[0].state.waiting is not None)
        reason, message = waiting_of(node.status("p").container_statuses[0])
        assert reason == "CreateContainerConfigError"
        assert "container has runAsNonRoot and image will run as root" in message
        reason, message = waiting_of(node.status("named").container_statuses[0])
        assert reason == "CreateContainerConfigError" and "non-numeric user (app)" in message
        assert node.events(pod="p", reason="Failed")


def _renamed(pod: Pod, name: str, image: str) -> Pod:
    container = attrs.evolve(pod.spec.containers[0], image=image)
    return attrs.evolve(
        pod,
        metadata=attrs.evolve(pod.metadata, name=name, uid=f"uid-{name}"),
        spec=attrs.evolve(pod.spec, containers=(container,)),
    )


# --- admission ---------------------------------------------------------------------------


def admit(text: str, **kw: object) -> tuple[str, str] | None:
    pod = one_pod(text)
    admitted, rejected = Admission(**kw).admit([pod])  # type: ignore[arg-type]
    if admitted:
        return None
    return rejected[0][1].reason, rejected[0][1].message


def test_safe_sysctls_are_admitted_and_others_refused() -> None:
    safe = pod_yaml("{sysctls: [{name: net.ipv4.tcp_syncookies, value: '1'}]}")
    assert admit(safe) is None
    unsafe = pod_yaml("{sysctls: [{name: net.core.somaxconn, value: '1024'}]}")
    refused = admit(unsafe)
    assert refused is not None and refused[0] == "SysctlForbidden"
    assert 'forbidden sysctl: "net.core.somaxconn" not allowlisted' in refused[1]
    assert admit(unsafe, allowed_unsafe_sysctls=("net.core.*",)) is None
    assert admit(unsafe, allowed_unsafe_sysctls=("net.core.somaxconn",)) is None
    not_namespaced = pod_yaml("{sysctls: [{name: vm.swappiness, value: '1'}]}")
    refused = admit(not_namespaced, allowed_unsafe_sysctls=("vm.*",))
    assert refused is not None and "not namespaced" in refused[1]
    host_net = pod_yaml(
        "{sysctls: [{name: net.ipv4.tcp_syncookies, value: '1'}]}", extra="  hostNetwork: true\n"
    )
    refused = admit(host_net)
    assert refused is not None and "host net" in refused[1]


def test_apparmor_is_refused_where_the_host_has_none() -> None:
    text = pod_yaml(container_sc="{appArmorProfile: {type: RuntimeDefault}}")
    refused = admit(text, host_security=HostSecurity(apparmor=False))
    assert refused is not None and refused[0] == "AppArmorNotSupported"
    assert "spec.containers[0].securityContext.appArmorProfile" in refused[1]
    assert admit(text, host_security=HostSecurity(apparmor=True)) is None


def test_selinux_is_refused_where_the_host_has_none() -> None:
    text = pod_yaml("{seLinuxOptions: {level: 's0:c123,c456'}}")
    refused = admit(text, host_security=HostSecurity())
    assert refused is not None and refused[0] == "SELinuxNotSupported"
    assert admit(text, host_security=HostSecurity(selinux=True)) is None


def test_host_users_false_is_refused() -> None:
    refused = admit(pod_yaml(extra="  hostUsers: false\n"))
    assert refused is not None and refused[0] == "UserNamespacesNotSupported"
    assert "hostUsers" in refused[1]
    assert admit(pod_yaml(extra="  hostUsers: true\n")) is None


def test_detect_host_security(tmp_path: Path) -> None:
    assert detect_host_security(str(tmp_path)) == HostSecurity()
    (tmp_path / "module/apparmor/parameters").mkdir(parents=True)
    (tmp_path / "module/apparmor/parameters/enabled").write_text("Y\n")
    (tmp_path / "fs/selinux").mkdir(parents=True)
    (tmp_path / "fs/selinux/enforce").write_text("1")
    assert detect_host_security(str(tmp_path)) == HostSecurity(apparmor=True, selinux=True)


def test_the_agent_takes_allowed_unsafe_sysctls_from_its_config(tmp_path: Path) -> None:
    config = KubeletConfig(allowed_unsafe_sysctls=("kernel.msg*",))
    with FakeNode(tmp_path, config=config) as node:
        assert node.kubelet._rooms.admission.allowed_unsafe_sysctls == ("kernel.msg*",)


# --- fsGroup -----------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another group needs root")
def test_fs_group_owns_empty_dir_volumes(tmp_path: Path) -> None:
    pod = one_pod(
        pod_yaml("{fsGroup: 2000}", extra="  volumes:\n  - name: data\n    emptyDir: {}\n")
    )
    volumes = VolumeManager(str(tmp_path / "root"), "node")
    path = volumes.setup(pod)["data"].host_path
    Path(path, "file").write_text("x")
    os.chmod(Path(path, "file"), 0o600)
    volumes.setup(pod)  # a second start walks the volume again (fsGroupChangePolicy Always)
    for item in (path, os.path.join(path, "file")):
        assert os.stat(item).st_gid == 2000
    mode = os.stat(path).st_mode
    assert mode & stat.S_ISGID and mode & stat.S_IRWXG == stat.S_IRWXG
    assert os.stat(os.path.join(path, "file")).st_mode & 0o060 == 0o060
    volumes.release()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another group needs root")
def test_on_root_mismatch_leaves_a_matching_volume_alone(tmp_path: Path) -> None:
    pod = one_pod(
        pod_yaml(
            "{fsGroup: 2000, fsGroupChangePolicy: OnRootMismatch}",
            extra="  volumes:\n  - name: data\n    emptyDir: {}\n",
        )
    )
    volumes = VolumeManager(str(tmp_path / "root"), "node")
    path = volumes.setup(pod)["data"].host_path
    late = Path(path, "late")
    late.write_text("x")
    os.chmod(late, 0o600)
    volumes.setup(pod)
    assert os.stat(late).st_mode & 0o060 == 0  # not walked: the root already matched
    volumes.release()


# --- the runtimes ------------------------------------------------------------------------


def test_the_fake_records_the_security_context_and_the_image_user(tmp_path: Path) -> None:
    runtime = FakeRuntime()
    runtime.add_image("app/x:1", user="1000:1000", pulled=True)
    image = runtime.image_status("app/x:1")
    assert image is not None and (image.uid, image.username) == (1000, "")
    with FakeNode(tmp_path) as node:
        node.apply((CORPUS / "security-context.yaml").read_text())
        node.run_until(lambda: node.status("security-context-demo").phase == "Running")
        (app,) = node.containers("security-context-demo")
        sc = node.runtime.container_config(app.id).security_context
        assert sc is not None
        assert (sc.run_as_user, sc.run_as_group) == (1000, 3000)
        assert sc.supplemental_groups == (2000, 4000) and sc.no_new_privs


def test_docker_security_arguments() -> None:
    sc = LinuxContainerSecurityContext(
        capabilities=Capability(("NET_ADMIN",), ("ALL",)),
        run_as_user=1000,
        run_as_group=3000,
        readonly_rootfs=True,
        supplemental_groups=(2000, 4000),
        no_new_privs=True,
        seccomp=SecurityProfile(ProfileType.UNCONFINED),
    )
    user, host = security_args("c", sc, EngineSecurity())
    assert user == "1000:3000"
    assert host == {
        "group_add": ["2000", "4000"],
        "cap_add": ["NET_ADMIN"],
        "cap_drop": ["ALL"],
        "read_only": True,
        "security_opt": ["no-new-privileges", "seccomp=unconfined"],
    }
    assert (
        security_args("c", LinuxContainerSecurityContext(run_as_username="app"), EngineSecurity())[
            0
        ]
        == "app"
    )


def test_docker_reads_a_localhost_seccomp_profile(tmp_path: Path) -> None:
    profile = tmp_path / "audit.json"
    profile.write_text('{"defaultAction": "SCMP_ACT_LOG"}')
    sc = LinuxContainerSecurityContext(seccomp=SecurityProfile(ProfileType.LOCALHOST, str(profile)))
    assert security_args("c", sc, EngineSecurity())[1]["security_opt"] == [
        'seccomp={"defaultAction": "SCMP_ACT_LOG"}'
    ]
    missing = attrs.evolve(sc, seccomp=SecurityProfile(ProfileType.LOCALHOST, str(tmp_path / "no")))
    with pytest.raises(Exception, match="seccomp: cannot read the Localhost profile"):
        security_args("c", missing, EngineSecurity())


@pytest.mark.parametrize(
    ("sc", "words"),
    [
        (
            LinuxContainerSecurityContext(supplemental_groups_policy="Strict"),
            "supplemental_groups_policy",
        ),
        (
            LinuxContainerSecurityContext(apparmor=SecurityProfile(ProfileType.RUNTIME_DEFAULT)),
            "apparmor",
        ),
        (
            LinuxContainerSecurityContext(selinux_options=SELinuxOption(level="s0")),
            "selinux_options",
        ),
    ],
)
def test_docker_refuses_what_its_engine_cannot_apply(
    sc: LinuxContainerSecurityContext, words: str
) -> None:
    with pytest.raises(InvalidConfig, match=words):
        security_args("c", sc, EngineSecurity())


def test_docker_applies_apparmor_where_the_engine_has_it() -> None:
    sc = LinuxContainerSecurityContext(
        apparmor=SecurityProfile(ProfileType.LOCALHOST, "deny-write")
    )
    engine = EngineSecurity.from_info(
        {"SecurityOptions": ["name=apparmor", "name=seccomp,profile=default"]}
    )
    assert security_args("c", sc, engine)[1]["security_opt"] == ["apparmor=deny-write"]


def test_allowed_unsafe_sysctls_is_a_flag_and_an_environment_variable() -> None:
    flags = parsed_flags(
        "--allowed-unsafe-sysctls", "net.core.*", "--allowed-unsafe-sysctls", "kernel.msgmax"
    )
    made = kubelet_config(resolve_settings(flags, {}, None))
    assert made.allowed_unsafe_sysctls == ("net.core.*", "kernel.msgmax")
    from_env = resolve_settings(
        parsed_flags(), {"KUBECORE_ALLOWED_UNSAFE_SYSCTLS": "a.b,c.*"}, None
    )
    assert kubelet_config(from_env).allowed_unsafe_sysctls == ("a.b", "c.*")


def test_a_refusal_names_where_the_field_was_set() -> None:
    pod_level = admit(pod_yaml("{appArmorProfile: {type: RuntimeDefault}}"))
    assert pod_level is not None and "spec.securityContext.appArmorProfile" in pod_level[1]
    annotated = pod_yaml().replace(
        "metadata: {name: p, uid: u1}",
        "metadata: {name: p, uid: u1, annotations:"
        " {container.apparmor.security.beta.kubernetes.io/c: runtime/default}}",
    )
    refused = admit(annotated)
    assert refused is not None
    assert "metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]" in refused[1]
    selinux = admit(pod_yaml(container_sc="{seLinuxOptions: {type: spc_t}}"))
    assert selinux is not None and "spec.containers[0].securityContext.seLinuxOptions" in selinux[1]


def test_slash_separated_sysctl_names_are_read_as_dotted() -> None:
    pod = one_pod(pod_yaml("{sysctls: [{name: net/ipv4/ip_local_port_range, value: '1 2'}]}"))
    assert sandbox_config(pod, 0, dns=None).sysctls == {"net.ipv4.ip_local_port_range": "1 2"}
    assert admit(pod_yaml("{sysctls: [{name: net/ipv4/tcp_syncookies, value: '1'}]}")) is None
