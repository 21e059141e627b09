"""The runtime contract, published as ``kubecore.runtime``: ``protocols`` (the seams a plugin
fills, composed of CRI-shaped parts), ``capabilities`` (the optional parts, found by type),
``values`` (what crosses the seams), ``bases`` (what a plugin builds on), ``labels`` (the
identity written on runtime objects), ``errors`` (every error kubecore raises), ``observed`` (the
agent's one reading of a runtime snapshot)."""
