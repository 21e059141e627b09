"""Every gRPC status of a CRI call becomes a kubecore error in one place; UNAVAILABLE is
retried."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from kubecore import ContainerRuntimeError
from kubecore.runtime import (
    Conflict,
    ContainerNotFound,
    ImageNotFound,
    ImagePullError,
    InvalidConfig,
    NotFound,
    RuntimeTimeout,
    RuntimeUnavailable,
    SandboxNotFound,
)
from kubecore_cri._client import CriConnection
from kubecore_cri._errors import Subject, image_missing, sandbox_gone, translate
from kubecore_cri._pb import api_pb2 as pb


class FakeRpcError(grpc.RpcError):
    """What a failed call raises: the status code and its details."""

    def __init__(self, code: grpc.StatusCode, details: str = "said the runtime") -> None:
        super().__init__(details)
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


@pytest.mark.parametrize(
    ("subject", "kind"),
    [
        (Subject.CONTAINER, ContainerNotFound),
        (Subject.SANDBOX, SandboxNotFound),
        (Subject.IMAGE, ImageNotFound),
        (Subject.PULL, ImagePullError),
        (Subject.RUNTIME, NotFound),
    ],
)
def test_not_found_names_what_is_missing(subject: Subject, kind: type) -> None:
    error = translate(FakeRpcError(grpc.StatusCode.NOT_FOUND, "no such thing"), subject, "Call")
    assert type(error) is kind
    assert "Call: no such thing" in str(error)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (grpc.StatusCode.ALREADY_EXISTS, Conflict),
        (grpc.StatusCode.FAILED_PRECONDITION, Conflict),
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidConfig),
        (grpc.StatusCode.UNAVAILABLE, RuntimeUnavailable),
        (grpc.StatusCode.DEADLINE_EXCEEDED, RuntimeTimeout),
        (grpc.StatusCode.UNKNOWN, ContainerRuntimeError),
        (grpc.StatusCode.INTERNAL, ContainerRuntimeError),
        (grpc.StatusCode.UNIMPLEMENTED, ContainerRuntimeError),
    ],
)
def test_codes_map_to_kubecore_errors(code: grpc.StatusCode, kind: type) -> None:
    error = translate(FakeRpcError(code), Subject.CONTAINER)
    assert type(error) is kind


def test_a_pull_that_fails_is_a_pull_error_unless_the_runtime_is_gone() -> None:
    refused = translate(FakeRpcError(grpc.StatusCode.UNKNOWN, "401 Unauthorized"), Subject.PULL)
    assert isinstance(refused, ImagePullError) and "401" in str(refused)
    gone = translate(FakeRpcError(grpc.StatusCode.UNAVAILABLE), Subject.PULL)
    assert isinstance(gone, RuntimeUnavailable)


def test_other_exceptions_are_not_translated() -> None:
    assert translate(ValueError("x"), Subject.RUNTIME) is None
    mine = ContainerNotFound("c")
    assert translate(mine, Subject.SANDBOX) is mine


def test_containerd_messages_are_read() -> None:
    assert image_missing('failed to resolve image "nope/nope:1": not found')
    assert not image_missing("an error occurred when try to find sandbox: not found")
    assert sandbox_gone('sandbox container "abc" is not running')
    assert sandbox_gone("failed to get sandbox container task: no running task found")
    assert not sandbox_gone("container is in CONTAINER_EXITED state")


class Stub:
    """A runtime service stub whose ``Version`` fails with ``failures`` first."""

    def __init__(self, *failures: grpc.StatusCode) -> None:
        self.failures = list(failures)
        self.calls: list[tuple[Any, float | None]] = []

    def Version(self, request: Any, timeout: float | None = None) -> Any:
        self.calls.append((request, timeout))
        if self.failures:
            raise FakeRpcError(self.failures.pop(0))
        return pb.VersionResponse(runtime_name="fake", runtime_version="1")


def test_unavailable_is_retried_then_answers() -> None:
    stub = Stub(grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE)
    connection = CriConnection(stubs={"runtime": stub}, retry_delays=(0, 0, 0))
    answer = connection.call("Version", pb.VersionRequest(), timeout=3)
    assert answer.runtime_name == "fake"
    assert len(stub.calls) == 3 and stub.calls[0][1] == 3


def test_unavailable_past_the_retries_is_raised() -> None:
    stub = Stub(*[grpc.StatusCode.UNAVAILABLE] * 4)
    connection = CriConnection(stubs={"runtime": stub}, retry_delays=(0, 0))
    with pytest.raises(RuntimeUnavailable, match="cannot reach the CRI runtime"):
        connection.call("Version", pb.VersionRequest())
    assert len(stub.calls) == 3


def test_other_errors_are_not_retried() -> None:
    stub = Stub(grpc.StatusCode.DEADLINE_EXCEEDED)
    connection = CriConnection(stubs={"runtime": stub}, retry_delays=(0, 0))
    with pytest.raises(RuntimeTimeout):
        connection.call("Version", pb.VersionRequest())
    assert len(stub.calls) == 1


def test_a_closed_connection_refuses_at_once() -> None:
    connection = CriConnection(stubs={"runtime": Stub()})
    connection.close()
    with pytest.raises(RuntimeUnavailable, match="closed"):
        connection.call("Version", pb.VersionRequest())
