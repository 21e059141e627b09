"""What every HTTP endpoint of the agent shares, as Kubernetes' apimachinery gives every API
server its ``Status`` errors and request parameters: ``rules`` (the v1 ``Status`` failure body and
the one mapping from kubecore's errors to it, the bearer-token check, query parameters). It sits
below the rooms that answer HTTP (``_observability``'s log options, ``_streaming``, ``_api``,
``_http``), so none of them reaches up into another."""
