"""``pods/{name}/ephemeralcontainers``, the one way to add an ephemeral container (``kubectl
debug``), as the API server serves it: GET reads the pod; PUT and PATCH (strategic merge, JSON
merge or JSON patch, applied to the pod) change only its ``spec.ephemeralContainers`` (every other
change is dropped, as the API server drops it), may add ephemeral containers but never change
nor remove one (422 naming the field, ``ephemeral_rules``), are held to the node's pod-security
policy (403, as Pod Security Admission) and are stored like every write before they are applied
(``pod_subresource``)."""

from __future__ import annotations

from typing import Any

from kubecore._api.ephemeral_rules import invalid_field, unchanged_problems
from kubecore._api.pod_subresource import PodSubresource, decoded
from kubecore._api.pods import refuse_insecure
from kubecore._apimachinery.rules import error_for
from kubecore._contract.errors import ValidationError
from kubecore._manifest import pod_to_dict
from kubecore._model.v1 import Pod

SUBRESOURCE = "ephemeralcontainers"


class EphemeralContainers(PodSubresource):
    """The subresource over the pods' ``Resource`` and the API's storage."""

    name = SUBRESOURCE

    def changed(self, owned: Pod, wanted: dict[str, Any]) -> Pod:
        containers = wanted.get("ephemeralContainers")
        if containers is not None and not isinstance(containers, list):
            raise invalid_field(owned.metadata.name, "must be a list")
        data = pod_to_dict(owned)
        data["spec"]["ephemeralContainers"] = containers or []
        item = decoded(owned, data)
        problems = unchanged_problems(item, owned)
        if problems:
            raise error_for(ValidationError(problems), kind="Pod", name=owned.metadata.name)
        # A debug container is checked as the pod's own are (kubectl debug --profile=sysadmin).
        refuse_insecure(item, self.pods.kubelet.config.pod_security_policy())
        return item
