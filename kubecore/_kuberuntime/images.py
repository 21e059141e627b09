"""A container's image, made present before it is created: pulled as its pull policy says (one
pull at a time, under the node's pull rate limit, with the pod's pull secrets), and the image
pull back-off grown when a pull fails (``ImagePullBackOff``), cleared once it is present."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubecore._contract.errors import ContainerRuntimeError, ImageNeverPull, ImagePullError
from kubecore._contract.protocols import Puller
from kubecore._contract.values import EventType
from kubecore._kuberuntime.credentials import PullSecrets, pod_registry_auth
from kubecore._kuberuntime.pod_events import PodEvents
from kubecore._kuberuntime.pod_record import PodRecord
from kubecore._model.v1 import Container, Pod
from kubecore._observability.events import EventReason
from kubecore._planner.actions import BackoffEntry
from kubecore._util.clock import Clock
from kubecore._util.ratelimit import TokenBucket

Backoff = Callable[[BackoffEntry | None, float], BackoffEntry]
"""The next back-off after ``previous`` (None: the first failure) for a failure at ``now``."""


def _format_duration(seconds: float) -> str:
    return f"{seconds:.3g}s"


class Images:
    """Pulls the images of a pod's containers, and keeps their pull back-off."""

    def __init__(
        self,
        puller: Puller,
        events: PodEvents,
        clock: Clock,
        backoff: Backoff,
        *,
        pull_secrets: PullSecrets,
        pull_limiter: TokenBucket | None = None,
        image_lock: threading.Lock | None = None,
    ) -> None:
        self.puller = puller
        self.events = events
        self.clock = clock
        self.backoff = backoff
        self.pull_secrets = pull_secrets
        self.pull_limiter = pull_limiter
        self.image_lock = image_lock or threading.Lock()

    def pull(self, pod: Pod, image: str, container: str, *, init: bool = False) -> float:
        """Pull ``image`` for ``pod``; returns the seconds the pull took."""
        self.events.record(
            pod,
            EventType.NORMAL,
            EventReason.PULLING_IMAGE,
            f'Pulling image "{image}"',
            container,
            init=init,
        )
        with self.image_lock:
            if self.pull_limiter is not None:
                self.pull_limiter.acquire()
            start = self.clock.monotonic()
            try:
                auth = (
                    pod_registry_auth(pod, image, self.pull_secrets)
                    if pod.spec.image_pull_secrets
                    else None
                )
                self.puller.pull(image, auth)
            except ContainerRuntimeError as exc:
                self.events.record(
                    pod,
                    EventType.WARNING,
                    EventReason.FAILED_TO_PULL_IMAGE,
                    f'Failed to pull image "{image}": {exc}',
                    container,
                    init=init,
                )
                raise ImagePullError(f'failed to pull image "{image}": {exc}') from exc
            took = self.clock.monotonic() - start
        self.events.record(
            pod,
            EventType.NORMAL,
            EventReason.PULLED_IMAGE,
            f'Successfully pulled image "{image}" in {_format_duration(took)}',
            container,
            init=init,
        )
        return took

    def ensure(self, pod: Pod, container: Container, record: PodRecord, *, init: bool) -> None:
        """Make the container's image present as its pull policy says (``ImageNeverPull``,
        ``ImagePullError`` when it cannot be: the image back-off grows)."""
        policy = container.image_pull_policy
        image = container.image
        try:
            if policy == "Always":
                record.pull_seconds += self.pull(pod, image, container.name, init=init)
            else:
                present = self.puller.image_status(image) is not None
                if not present and policy == "Never":
                    message = f'Container image "{image}" is not present with pull policy of Never'
                    reason = EventReason.ERR_IMAGE_NEVER_PULL_POLICY
                    self.events.record(
                        pod, EventType.WARNING, reason, message, container.name, init=init
                    )
                    raise ImageNeverPull(message)
                if present:
                    self.events.record(
                        pod,
                        EventType.NORMAL,
                        EventReason.PULLED_IMAGE,
                        f'Container image "{image}" already present on machine',
                        container.name,
                        init=init,
                    )
                else:
                    record.pull_seconds += self.pull(pod, image, container.name, init=init)
        except ImagePullError:
            now = self.clock.now()
            record.image_backoff[container.name] = self.backoff(
                record.image_backoff.get(container.name), now
            )
            raise
        record.image_backoff.pop(container.name, None)
