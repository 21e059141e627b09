"""The ``cri`` plugin: its entry point, options, and the security modules it refuses."""

from __future__ import annotations

import configparser
import json
from pathlib import Path

import pytest

from kubecore.runtime import (
    ContainerConfig,
    InvalidConfig,
    LinuxContainerSecurityContext,
    ProfileType,
    SecurityProfile,
    SELinuxOption,
)
from kubecore_cri import _plugin
from kubecore_cri._client import DEFAULT_ENDPOINT, CriOptions, grpc_target
from kubecore_cri._images import CriPuller
from kubecore_cri._runtime import CriRuntime
from kubecore_cri._security import RuntimeSecurity

ROOT = Path(__file__).resolve().parents[3]


def test_setup_declares_the_entry_point_and_the_extra() -> None:
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    entry_points = setup["options.entry_points"]["kubecore"].split()
    assert entry_points[0:3] == ["cri", "=", "kubecore_cri._plugin"]
    assert "grpcio" in setup["options.extras_require"]["cri"]


def test_the_plugin_builds_a_runtime_and_a_puller_over_one_connection() -> None:
    bundle = _plugin.create_cri_runtime(endpoint="/run/x.sock", timeout="5", log_root="/l")
    assert bundle.name == "cri"
    assert isinstance(bundle.runtime, CriRuntime) and isinstance(bundle.puller, CriPuller)
    assert bundle.runtime.options.timeout == 5.0
    bundle.runtime.close()


def test_options() -> None:
    assert CriOptions().endpoint == DEFAULT_ENDPOINT
    assert (
        grpc_target("/run/containerd/containerd.sock") == "unix:///run/containerd/containerd.sock"
    )
    assert grpc_target("127.0.0.1:9000") == "127.0.0.1:9000"
    with pytest.raises(InvalidConfig, match=r"unknown cri runtime option.*endpiont"):
        CriOptions.from_mapping({"endpiont": "x"})
    with pytest.raises(InvalidConfig, match="timeout must be positive"):
        CriOptions.from_mapping({"timeout": "0"})
    with pytest.raises(InvalidConfig, match="pull_timeout must be a number"):
        CriOptions.from_mapping({"pull_timeout": "soon"})


def secured(**fields: object) -> ContainerConfig:
    sc = LinuxContainerSecurityContext(**fields)  # type: ignore[arg-type]
    return ContainerConfig(name="app", image="busybox:1.35", security_context=sc)


def containerd_info(**config: object) -> dict[str, str]:
    return {"config": json.dumps(config)}


def test_apparmor_needs_the_runtime_and_the_host(tmp_path: Path) -> None:
    flag = tmp_path / "enabled"
    profile = secured(apparmor=SecurityProfile(ProfileType.UNCONFINED))
    flag.write_text("Y\n")
    on = RuntimeSecurity.from_status_info(
        containerd_info(disableApparmor=False), local=True, apparmor_flag=flag
    )
    on.check(profile)
    flag.write_text("N\n")
    off = RuntimeSecurity.from_status_info(
        containerd_info(disableApparmor=False), local=True, apparmor_flag=flag
    )
    with pytest.raises(InvalidConfig, match="apparmor"):
        off.check(profile)
    missing = RuntimeSecurity.from_status_info(
        containerd_info(disableApparmor=False), local=True, apparmor_flag=tmp_path / "none"
    )
    assert not missing.apparmor
    disabled = RuntimeSecurity.from_status_info(containerd_info(disableApparmor=True), local=False)
    assert not disabled.apparmor


def test_selinux_needs_the_runtime_to_enable_it() -> None:
    labels = secured(selinux_options=SELinuxOption(level="s0:c1,c2"))
    RuntimeSecurity.from_status_info(containerd_info(enableSelinux=True), local=False).check(labels)
    with pytest.raises(InvalidConfig, match="selinux_options"):
        RuntimeSecurity.from_status_info(containerd_info(), local=False).check(labels)


def test_a_runtime_that_says_nothing_applies_neither() -> None:
    unknown = RuntimeSecurity.from_status_info({"config": "not json"}, local=False)
    assert unknown == RuntimeSecurity(apparmor=False, selinux=False)
    unknown.check(secured(run_as_user=1))  # nothing asked of it: nothing refused
