"""Pod sources and the pod configuration: where the desired pods come from (manifest files and
directories, a manifest URL, calls from an embedding program), what a source remembers across
restarts, how changes settle before they are acted on, and how the updates of every source are
merged into the agent's desired pods (as upstream kubelet's ``config/``)."""
