"""``help()`` on a plugin's runtime says what each method must do: ``RuntimeBase`` and
``PullerWrapper`` carry the protocols' contract text, which a plugin's overrides inherit."""

from __future__ import annotations

import inspect
import pydoc

import pytest

from kubecore.runtime import ContainerRuntime, Puller, PullerWrapper, RuntimeBase

METHODS = [
    (base, protocol, name)
    for base, protocol in ((RuntimeBase, ContainerRuntime), (PullerWrapper, Puller))
    for name, member in vars(base).items()
    if inspect.isfunction(member) and not name.startswith("_")
]


@pytest.mark.parametrize(("base", "protocol", "name"), METHODS, ids=[m[2] for m in METHODS])
def test_each_base_method_carries_the_protocols_contract(
    base: type, protocol: type, name: str
) -> None:
    contract = inspect.getdoc(getattr(protocol, name))
    assert contract, f"{protocol.__name__}.{name} has no contract text"
    assert inspect.getdoc(getattr(base, name)) == contract


class StopOnly(PullerWrapper):
    """A plugin's class overriding a method without a docstring of its own."""

    def remove_image(self, image: str) -> None:
        self.inner.remove_image(image)


def test_a_plugins_override_shows_the_contract_in_help() -> None:
    text = pydoc.render_doc(StopOnly.remove_image, renderer=pydoc.plaintext)
    contract = inspect.getdoc(Puller.remove_image)
    assert contract is not None and contract.splitlines()[0] in text
