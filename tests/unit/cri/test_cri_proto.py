"""The committed generated code is what ``scripts/gen-cri-proto.sh`` makes of the ``.proto``, and
the ``.proto`` carries CRI's own package, names and field numbers (the wire contract)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubecore_cri._pb import api_pb2 as pb

ROOT = Path(__file__).resolve().parents[3]
GENERATED = ROOT / "kubecore_cri" / "_pb"


@pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None,
    reason="grpcio-tools is not installed (pip install 'kubecore[dev]'): cannot regenerate",
)
def test_the_committed_code_is_what_the_script_generates(tmp_path: Path) -> None:
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "gen-cri-proto.sh"), str(tmp_path)],
        check=True,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        timeout=120,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["api_pb2.py"]
    for name in ("api_pb2.py",):
        fresh = (tmp_path / name).read_text()
        committed = (GENERATED / name).read_text()
        assert fresh == committed, f"{name} is stale: run scripts/gen-cri-proto.sh"


# (message, field, number) as upstream k8s.io/cri-api pkg/apis/runtime/v1/api.proto has them.
UPSTREAM_NUMBERS = [
    ("PodSandboxConfig", "metadata", 1),
    ("PodSandboxConfig", "log_directory", 3),
    ("PodSandboxConfig", "port_mappings", 5),
    ("PodSandboxConfig", "linux", 8),
    ("LinuxPodSandboxConfig", "sysctls", 3),
    ("LinuxSandboxSecurityContext", "run_as_group", 8),
    ("LinuxSandboxSecurityContext", "supplemental_groups_policy", 11),
    ("ContainerConfig", "log_path", 11),
    ("ContainerConfig", "linux", 15),
    ("ContainerConfig", "stop_signal", 18),
    ("LinuxContainerSecurityContext", "run_as_group", 12),
    ("LinuxContainerSecurityContext", "seccomp", 15),
    ("LinuxContainerSecurityContext", "apparmor", 16),
    ("LinuxContainerSecurityContext", "supplemental_groups_policy", 17),
    ("LinuxContainerResources", "memory_swap_limit_in_bytes", 10),
    ("ContainerStatus", "log_path", 15),
    ("ContainerStatus", "image_id", 17),
    ("Container", "image_id", 10),
    ("ImageSpec", "user_specified_image", 18),
    ("UpdateContainerResourcesRequest", "annotations", 4),
    ("ImageFsInfoResponse", "container_filesystems", 2),
    ("ContainerEventResponse", "containers_statuses", 5),
]


@pytest.mark.parametrize(("message", "field", "number"), UPSTREAM_NUMBERS)
def test_field_numbers_are_upstreams(message: str, field: str, number: int) -> None:
    descriptor = getattr(pb, message).DESCRIPTOR
    assert descriptor.fields_by_name[field].number == number


def test_the_package_and_services_are_cris() -> None:
    assert pb.DESCRIPTOR.package == "runtime.v1"
    services = pb.DESCRIPTOR.services_by_name
    assert services["RuntimeService"].full_name == "runtime.v1.RuntimeService"
    assert "PullImage" in services["ImageService"].methods_by_name
    assert "GetContainerEvents" in services["RuntimeService"].methods_by_name


def test_enum_values_are_upstreams() -> None:
    assert pb.SANDBOX_NOTREADY == 1
    assert pb.CONTAINER_EXITED == 2
    assert pb.TARGET == 3
    assert pb.SIGNAL_SIGTERM == 23
    assert pb.CONTAINER_DELETED_EVENT == 3


def test_the_stubs_call_every_rpc_of_the_proto_by_its_path() -> None:
    from kubecore_cri._stubs import IMAGE_SERVICE, RUNTIME_SERVICE, service_stub

    opened: list[tuple[str, str, object, object]] = []

    class Channel:
        def unary_unary(self, path: str, **codec: object) -> str:
            opened.append(
                ("unary", path, codec["request_serializer"], codec["response_deserializer"])
            )
            return path

        def unary_stream(self, path: str, **codec: object) -> str:
            opened.append(
                ("stream", path, codec["request_serializer"], codec["response_deserializer"])
            )
            return path

    runtime = service_stub(Channel(), RUNTIME_SERVICE)
    images = service_stub(Channel(), IMAGE_SERVICE)
    assert runtime.Version == "/runtime.v1.RuntimeService/Version"
    assert images.PullImage == "/runtime.v1.ImageService/PullImage"
    kinds = {path: kind for kind, path, _, _ in opened}
    assert kinds["/runtime.v1.RuntimeService/GetContainerEvents"] == "stream"
    assert kinds["/runtime.v1.RuntimeService/ExecSync"] == "unary"
    proto = (ROOT / "kubecore_cri" / "proto" / "api.proto").read_text()
    assert len(opened) == proto.count("rpc "), "one stub a method of the .proto"
    codecs = {path: (ser, de) for _, path, ser, de in opened}
    ser, de = codecs["/runtime.v1.RuntimeService/Version"]
    assert ser == pb.VersionRequest.SerializeToString
    assert de == pb.VersionResponse.FromString
