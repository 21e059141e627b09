"""The event log: events aggregated as client-go's ``EventCorrelator`` aggregates them (repeats
counted, similar events combined, a spam filter per object), bounded, versioned for watches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecore._contract.values import Event, EventType, ObjectReference
from kubecore._observability.event_log import (
    AGGREGATE_INTERVAL,
    COMBINED_PREFIX,
    SPAM_BURST,
    SPAM_QPS,
    EventCorrelator,
    EventLog,
    HistoryExpired,
)
from kubecore._observability.events import aggregated_v1_event, pod_reference

WEB = pod_reference("default", "web", "uid-1", "app")


def unhealthy(
    at: float, message: str = "Readiness probe failed: ", ref: ObjectReference = WEB
) -> Event:
    return Event(ref, EventType.WARNING, "Unhealthy", message, at)


def test_a_repeated_event_is_one_event_with_a_count_and_both_times() -> None:
    log = EventLog()
    for second in range(5):
        log.record(unhealthy(1000.0 + second * 1.5))
    (entry,), _ = log.events()
    assert entry.count == 5
    assert (entry.first_timestamp, entry.last_timestamp) == (1000.0, 1006.0)
    body = aggregated_v1_event(entry, node="node-1")
    assert body["count"] == 5
    assert body["firstTimestamp"] == "1970-01-01T00:16:40Z"
    assert body["lastTimestamp"] == "1970-01-01T00:16:46Z"
    assert body["series"] == {"count": 5, "lastObservedTime": "1970-01-01T00:16:46.000000Z"}
    assert body["metadata"]["name"] == entry.name and entry.name.startswith("web.")
    assert body["metadata"]["resourceVersion"] == str(entry.version)


def test_a_single_event_has_no_series() -> None:
    log = EventLog()
    log.record(unhealthy(1000.0))
    (entry,), _ = log.events()
    body = aggregated_v1_event(entry, node="node-1")
    assert body["count"] == 1 and "series" not in body
    assert body["firstTimestamp"] == body["lastTimestamp"]


def test_events_of_another_container_message_or_reason_are_other_events() -> None:
    log = EventLog()
    log.record(unhealthy(1.0))
    log.record(unhealthy(2.0, ref=pod_reference("default", "web", "uid-1", "side")))
    log.record(unhealthy(3.0, message="Liveness probe failed: "))
    log.record(Event(WEB, EventType.NORMAL, "Started", "Readiness probe failed: ", 4.0))
    entries, _ = log.events()
    assert [e.count for e in entries] == [1, 1, 1, 1]
    assert len({e.name for e in entries}) == 4


def test_similar_events_past_the_threshold_are_combined() -> None:
    """Nine distinct messages stay apart; from the tenth on, one combined event (as
    ``EventAggregate`` with ``maxEvents`` 10) carrying the newest message."""
    log = EventLog()
    for i in range(15):
        log.record(unhealthy(100.0 + i, message=f"failure {i}"))
    entries, _ = log.events()
    assert [e.event.message for e in entries[:9]] == [f"failure {i}" for i in range(9)]
    combined = entries[9]
    assert combined.event.message == COMBINED_PREFIX + "failure 14"
    assert combined.count == 6 and combined.first_timestamp == 109.0
    assert len(entries) == 10


def test_similar_events_are_forgotten_after_the_interval() -> None:
    log = EventLog()
    for i in range(9):
        log.record(unhealthy(100.0 + i, message=f"failure {i}"))
    later = 108.0 + AGGREGATE_INTERVAL + 1
    log.record(unhealthy(later, message="failure 9"))
    assert not any(e.event.message.startswith(COMBINED_PREFIX) for e in log.events()[0])


def test_the_spam_filter_holds_an_object_past_its_burst_and_the_count_catches_up() -> None:
    log = EventLog()
    for i in range(SPAM_BURST + 5):
        log.record(unhealthy(10.0 + i * 0.01))
    (entry,), _ = log.events()
    assert entry.count == SPAM_BURST  # the five over the burst are held back
    refill = 1.0 / SPAM_QPS
    log.record(unhealthy(10.0 + refill + 1))
    (entry,), _ = log.events()
    assert entry.count == SPAM_BURST + 6  # the held ones are counted when one passes
    other = pod_reference("default", "other", "uid-2", "app")
    log.record(unhealthy(11.0, ref=other))
    assert [e.event.involved_object.name for e in log.events()[0]] == ["web", "other"]


def test_the_log_keeps_the_newest_events_and_tells_a_watch_what_it_dropped() -> None:
    log = EventLog(max_size=3, correlator=EventCorrelator(burst=1000))
    start = log.version
    for i in range(5):
        log.record(unhealthy(float(i), message=f"m{i}"))
    entries, version = log.events()
    assert [e.event.message for e in entries] == ["m2", "m3", "m4"]
    with pytest.raises(HistoryExpired):
        log.changes_after(start)
    changes = log.changes_after(version - 3)  # m3 added dropped m0; m4 added dropped m1
    assert [(c.type, c.entry.event.message) for c in changes] == [
        ("DELETED", "m0"),
        ("ADDED", "m4"),
        ("DELETED", "m1"),
    ]
    with pytest.raises(HistoryExpired, match="too large"):
        log.changes_after(version + 10)
    assert log.changes_after(version) == []


def test_an_update_is_a_modified_change_with_a_newer_version() -> None:
    log = EventLog()
    log.record(unhealthy(1.0))
    (first,), version = log.events()
    log.record(unhealthy(2.0))
    (change,) = log.changes_after(version)
    assert change.type == "MODIFIED" and change.version > version
    assert change.entry.name == first.name and change.entry.count == 2


def test_names_stay_unique_at_the_same_instant() -> None:
    log = EventLog()
    for reason in ("Pulling", "Pulled", "Created", "Started"):
        log.record(Event(WEB, EventType.NORMAL, reason, reason, 5.0))
    names = [e.name for e in log.events()[0]]
    assert len(set(names)) == 4


def test_the_caches_stay_bounded() -> None:
    correlator = EventCorrelator(cache_size=8)
    log = EventLog(max_size=4, correlator=correlator)
    for i in range(100):
        ref = pod_reference("default", f"pod-{i}", f"uid-{i}")
        log.record(unhealthy(float(i), ref=ref))
    assert len(log) == 4
    caches = (correlator._similar, correlator._seen, correlator._buckets)
    assert max(len(cache) for cache in caches) == 8


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.sampled_from(["Unhealthy", "BackOff"]),
            st.integers(0, 12),
            st.floats(0, 900),
        ),
        max_size=80,
    ),
    st.integers(1, 20),
)
def test_whatever_is_recorded_the_log_stays_consistent(
    records: list[tuple[str, str, int, float]], max_size: int
) -> None:
    """Counts add up to at most what was recorded, every kept event is there once with
    first <= last, versions only grow, and the log keeps at most ``max_size``."""
    log = EventLog(max_size=max_size)
    now = 0.0
    seen = log.version
    for pod, reason, message, step in records:
        now += step
        ref = pod_reference("default", pod, f"uid-{pod}")
        log.record(Event(ref, EventType.WARNING, reason, f"m{message}", now))
        assert log.version >= seen
        seen = log.version
    entries, version = log.events()
    assert len(entries) <= max_size and version == seen
    assert len({e.name for e in entries}) == len(entries)
    assert sum(e.count for e in entries) <= len(records)
    assert all(e.first_timestamp <= e.last_timestamp and e.count >= 1 for e in entries)
    assert sorted(e.version for e in entries) == [e.version for e in entries]
