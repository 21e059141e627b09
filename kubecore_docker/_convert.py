"""Pure conversions between the Docker Engine API's JSON and kubecore's runtime values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from kubecore.runtime import (
    CONTAINER_NAME_LABEL,
    POD_UID_LABEL,
    ContainerStats,
    Image,
    PullProgress,
    RuntimeContainer,
    RuntimeEvent,
    RuntimeEventType,
    RuntimeSandbox,
    RuntimeState,
    SandboxState,
    parse_image_ref,
    parse_image_user,
    parse_rfc3339,
    pod_identity,
)
from kubecore_docker._names import SANDBOX_ID_LABEL, attempt_from_name, split_labels

Json = Mapping[str, Any]

_EXIT_IN_STATUS = re.compile(r"^Exited \((?P<code>-?\d+)\)")


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 time with up to nanoseconds as epoch seconds; the zero time (year 1) is None."""
    if not text or (text[-1:] not in "Zz" and text[-6:-5] not in ("+", "-")):
        return None
    if text[:4] < "1970":  # Docker's zero time, 0001-01-01T00:00:00Z
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


@attrs.frozen
class Summary:
    """What one entry of the container list (or an inspect) says about a container."""

    id: str
    name: str
    labels: Mapping[str, str]
    image: str
    image_id: str
    created_at: float
    status: str
    """The engine's state word: created, running, paused, restarting, removing, exited, dead."""
    status_text: str = ""
    ip: str = ""


@attrs.frozen
class StateDetail:
    """The parts of an inspect's ``State`` the list cannot tell."""

    status: str
    running: bool
    exit_code: int
    error: str
    oom_killed: bool
    started_at: float | None
    finished_at: float | None


def _network_ip(network_settings: Json | None) -> str:
    if not network_settings:
        return ""
    direct = network_settings.get("IPAddress")
    if direct:
        return str(direct)
    for network in (network_settings.get("Networks") or {}).values():
        if network and network.get("IPAddress"):
            return str(network["IPAddress"])
    return ""


def summary_from_list(entry: Json) -> Summary:
    names = entry.get("Names") or [""]
    return Summary(
        id=entry["Id"],
        name=str(names[0]).lstrip("/"),
        labels=dict(entry.get("Labels") or {}),
        image=str(entry.get("Image") or ""),
        image_id=str(entry.get("ImageID") or ""),
        created_at=float(entry.get("Created") or 0),
        status=str(entry.get("State") or ""),
        status_text=str(entry.get("Status") or ""),
        ip=_network_ip(entry.get("NetworkSettings")),
    )


def summary_from_inspect(data: Json) -> Summary:
    config = data.get("Config") or {}
    return Summary(
        id=data["Id"],
        name=str(data.get("Name") or "").lstrip("/"),
        labels=dict(config.get("Labels") or {}),
        image=str(config.get("Image") or ""),
        image_id=str(data.get("Image") or ""),
        created_at=parse_time(data.get("Created")) or 0.0,
        status=str((data.get("State") or {}).get("Status") or ""),
        ip=_network_ip(data.get("NetworkSettings")),
    )


def detail_from_inspect(data: Json) -> StateDetail:
    state = data.get("State") or {}
    return StateDetail(
        status=str(state.get("Status") or ""),
        running=bool(state.get("Running")),
        exit_code=int(state.get("ExitCode") or 0),
        error=str(state.get("Error") or ""),
        oom_killed=bool(state.get("OOMKilled")),
        started_at=parse_time(state.get("StartedAt")),
        finished_at=parse_time(state.get("FinishedAt")),
    )


def exit_code_from_status(text: str) -> int | None:
    """``Exited (137) 5 seconds ago`` -> 137."""
    match = _EXIT_IN_STATUS.match(text)
    return int(match["code"]) if match else None


def state_key(summary: Summary) -> tuple[str, str, int | None]:
    """What must stay the same for a cached inspect of this container to still be true."""
    return (summary.id, summary.status, exit_code_from_status(summary.status_text))


def sandbox_from(summary: Summary) -> RuntimeSandbox:
    labels, annotations = split_labels(summary.labels)
    namespace, name, uid = pod_identity(labels)
    return RuntimeSandbox(
        id=summary.id,
        name=name,
        namespace=namespace,
        uid=uid,
        attempt=attempt_from_name(summary.name),
        state=SandboxState.READY if summary.status == "running" else SandboxState.NOTREADY,
        created_at=summary.created_at,
        ip=summary.ip if summary.status == "running" else "",
        labels=labels,
        annotations=annotations,
    )


def _state_fields(detail: StateDetail) -> dict[str, Any]:
    """dockershim's reading of a Docker state: state, exit code, reason, message, times."""
    if detail.running or detail.status in ("running", "paused", "restarting"):
        return {"state": RuntimeState.RUNNING, "started_at": detail.started_at}
    started = detail.started_at
    if started is not None and detail.finished_at is not None:
        # The engine stamps StartedAt after the start call returns and FinishedAt from the exit:
        # a process that exits at once can "finish" before it "started".
        started = min(started, detail.finished_at)
    times = {"started_at": started, "finished_at": detail.finished_at}
    if detail.finished_at is not None:
        if detail.oom_killed:
            reason = "OOMKilled"
        elif detail.exit_code == 0:
            reason = "Completed"
        else:
            reason = "Error"
        return {
            "state": RuntimeState.EXITED,
            "exit_code": detail.exit_code,
            "reason": reason,
            "message": detail.error,
            **times,
        }
    if detail.exit_code != 0 or detail.error:
        # A start that failed: Docker leaves it `created`, with an exit code and an error.
        return {
            "state": RuntimeState.EXITED,
            "exit_code": detail.exit_code or 128,
            "reason": "ContainerCannotRun",
            "message": detail.error,
            **times,
        }
    if detail.status == "created":
        return {"state": RuntimeState.CREATED}
    if detail.status in ("exited", "dead"):
        return {"state": RuntimeState.EXITED, "exit_code": detail.exit_code, "reason": "Error"}
    return {"state": RuntimeState.UNKNOWN}


def container_from(summary: Summary, detail: StateDetail) -> RuntimeContainer:
    labels, annotations = split_labels(summary.labels)
    return RuntimeContainer(
        id=summary.id,
        sandbox_id=labels.get(SANDBOX_ID_LABEL, ""),
        name=labels.get(CONTAINER_NAME_LABEL, ""),
        image=summary.image,
        created_at=summary.created_at,
        attempt=attempt_from_name(summary.name),
        image_id=summary.image_id,
        labels=labels,
        annotations=annotations,
        **_state_fields(detail),
    )


_EVENT_TYPES = {
    "create": RuntimeEventType.CREATED,
    "start": RuntimeEventType.STARTED,
    "die": RuntimeEventType.DIED,
    "oom": RuntimeEventType.OOM,
    "destroy": RuntimeEventType.DELETED,
}


def event_from(message: Json) -> RuntimeEvent | None:
    """A container event from the engine's stream, or None for one kubecore does not use."""
    if message.get("Type", "container") != "container":
        return None
    kind = _EVENT_TYPES.get(str(message.get("Action") or ""))
    actor = message.get("Actor") or {}
    container_id = str(actor.get("ID") or "")
    if kind is None or not container_id:
        return None
    attributes = actor.get("Attributes") or {}
    exit_code: int | None = None
    if kind is RuntimeEventType.DIED and str(attributes.get("exitCode", "")).lstrip("-").isdigit():
        exit_code = int(attributes["exitCode"])
    nanos = message.get("timeNano")
    timestamp = nanos / 1e9 if isinstance(nanos, int) else float(message.get("time") or 0)
    return RuntimeEvent(
        type=kind,
        container_id=container_id,
        timestamp=timestamp,
        pod_uid=str(attributes.get(POD_UID_LABEL, "")),
        container_name=str(attributes.get(CONTAINER_NAME_LABEL, "")),
        exit_code=exit_code,
    )


def _first_int(stats: Json, *names: str) -> int | None:
    for name in names:
        value = stats.get(name)
        if isinstance(value, int):
            return value
    return None


def stats_from(
    container_id: str, data: Json, fallback_time: float, size_rw: int | None = None
) -> ContainerStats:
    """One container's figures from ``stats``; ``size_rw`` its writable layer's size."""
    cpu = ((data.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
    memory = data.get("memory_stats") or {}
    usage = memory.get("usage")
    inner = memory.get("stats") or {}
    working_set: int | None = None
    if isinstance(usage, int):
        # cgroup v1 reports total_inactive_file, v2 inactive_file.
        inactive = inner.get("total_inactive_file", inner.get("inactive_file", 0)) or 0
        working_set = max(0, usage - int(inactive))
    return ContainerStats(
        container_id=container_id,
        timestamp=parse_time(data.get("read")) or fallback_time,
        cpu_usage_nanos=int(cpu) if isinstance(cpu, int) else None,
        memory_working_set_bytes=working_set,
        memory_usage_bytes=usage if isinstance(usage, int) else None,
        # cgroup v1 names (total_rss, total_pgfault) first, then v2's (anon, pgfault).
        memory_rss_bytes=_first_int(inner, "total_rss", "rss", "anon"),
        memory_page_faults=_first_int(inner, "total_pgfault", "pgfault"),
        memory_major_page_faults=_first_int(inner, "total_pgmajfault", "pgmajfault"),
        writable_layer_used_bytes=size_rw,
    )


def _real(names: list[str] | None) -> tuple[str, ...]:
    return tuple(n for n in (names or []) if n and not n.startswith("<none>"))


def image_from(entry: Json) -> Image:
    """An entry of the image list, or an image inspect (both carry these fields)."""
    created = entry.get("Created")
    uid, username = parse_image_user(str((entry.get("Config") or {}).get("User") or ""))
    return Image(
        id=str(entry["Id"]),
        tags=_real(entry.get("RepoTags")),
        digests=_real(entry.get("RepoDigests")),
        size=int(entry.get("Size") or 0),
        created_at=float(created) if isinstance(created, int | float) else parse_time(created) or 0,
        uid=uid,
        username=username,
    )


_IMAGE_ID = re.compile(r"^(sha256:)?[0-9a-f]{12,64}$")


def normalize_reference(reference: str) -> str:
    """Docker's familiar form: ``docker.io/library/busybox`` -> ``busybox:latest``."""
    return parse_image_ref(reference).familiar()


def is_image_id(reference: str) -> bool:
    return bool(_IMAGE_ID.match(reference))


def image_matches(reference: str, image: Image) -> bool:
    """True if ``reference`` names this image exactly (a tag, a digest or its id)."""
    if is_image_id(reference):
        bare = reference.removeprefix("sha256:")
        return image.id.removeprefix("sha256:").startswith(bare)
    wanted = normalize_reference(reference)
    if "@" in wanted:
        return wanted in {normalize_reference(d) for d in image.digests}
    return wanted in {normalize_reference(t) for t in image.tags}


def progress_from(image: str, message: Json) -> PullProgress:
    detail = message.get("progressDetail") or {}
    current = detail.get("current")
    total = detail.get("total")
    return PullProgress(
        image=image,
        status=str(message.get("status") or ""),
        current=current if isinstance(current, int) else None,
        total=total if isinstance(total, int) else None,
        layer=str(message.get("id") or ""),
    )


def pull_error(message: Json) -> str | None:
    """The error a pull stream reports inside its body (the HTTP status is already 200)."""
    error = message.get("error")
    if error:
        return str(error)
    detail = message.get("errorDetail")
    if isinstance(detail, Mapping) and detail.get("message"):
        return str(detail["message"])
    return None
