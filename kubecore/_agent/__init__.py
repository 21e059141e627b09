"""The agent: ``Kubelet``, the façade that turns desired pods into a converged node, and the
rooms behind it. ``config`` holds its settings, ``wiring`` builds and joins the rooms, ``desired``
admits the sources' pods (``admission/``), ``snapshot`` groups a relist by pod, ``sync_pass`` is
one level-triggered pass and ``sync_loop`` runs passes in the background (woken through
``signals`` and the runtime's ``event_stream``), ``pod_workers/`` syncs each pod, ``termination``
holds the pods on their way out, ``reads`` answers the agent's readers, ``node_lease`` keeps one
agent per node name, and ``outage`` paces the retries when the runtime does not answer."""
