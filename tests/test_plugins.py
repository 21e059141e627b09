"""Runtime plugins: discovery through the installed entry points, isolation, errors."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from typing import Any

import pytest

import kubecore
from kubecore import (
    DuplicateRuntime,
    ManualClock,
    PluginError,
    PluginWarning,
    RuntimeBundle,
    RuntimeRegistry,
    UnknownRuntime,
    hookimpl,
    load_runtime,
    plugin_manager,
    runtimes,
)
from kubecore import _plugins as plugins_module
from kubecore_fake import FakeHealthChecker, FakeRuntime


def fake_bundle(**options: Any) -> RuntimeBundle:
    runtime = FakeRuntime(ManualClock())
    return RuntimeBundle(runtime=runtime, puller=runtime, name=str(options.get("name", "")))


class InTestPlugin:
    """A plugin object, registered without any entry point."""

    def __init__(self, name: str = "intest", factory: Any = fake_bundle) -> None:
        self.name = name
        self.factory = factory

    @hookimpl
    def kubecore_register_runtimes(self, registry: RuntimeRegistry) -> None:
        registry.register(self.name, self.factory, "registered by a test")


@pytest.fixture(autouse=True)
def _no_disable_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECORE_DISABLE_PLUGINS", raising=False)


def test_installed_runtimes_are_listed() -> None:
    infos = {info.name: info for info in runtimes()}
    assert {"docker", "fake"} <= set(infos)
    assert infos["fake"].plugin == "fake"
    assert infos["docker"].plugin == "docker"
    assert infos["fake"].distribution.startswith("kubecore ")
    assert infos["fake"].description


def test_load_the_fake_runtime_with_options() -> None:
    clock = ManualClock()
    bundle = load_runtime("fake", clock=clock, images="busybox:1.36, nginx")
    assert bundle.name == "fake"
    assert isinstance(bundle.runtime, FakeRuntime)
    assert bundle.puller is bundle.runtime
    assert isinstance(bundle.health_checker, FakeHealthChecker)
    assert bundle.runtime.clock is clock
    bundle.puller.pull("nginx")
    with pytest.raises(kubecore.ImagePullError):
        bundle.puller.pull("redis")


def test_unknown_runtime_lists_the_installed_ones() -> None:
    with pytest.raises(UnknownRuntime) as info:
        load_runtime("nope")
    assert {"docker", "fake"} <= set(info.value.installed)
    assert "docker" in str(info.value) and "fake" in str(info.value)
    assert isinstance(info.value, PluginError)


def test_disable_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECORE_DISABLE_PLUGINS", " docker , something-else")
    names = [info.name for info in runtimes()]
    assert "docker" not in names and "fake" in names
    with pytest.raises(UnknownRuntime, match="installed runtimes: fake"):
        load_runtime("docker")


def test_disable_by_argument() -> None:
    pm = plugin_manager(disabled=["fake"])
    assert "fake" not in [info.name for info in pm.runtimes()]
    assert pm.disabled == frozenset({"fake"})


def test_an_in_test_plugin_object() -> None:
    pm = plugin_manager(extra_plugins=[InTestPlugin()])
    infos = {info.name: info for info in pm.runtimes()}
    assert {"intest", "fake", "docker"} <= set(infos)
    assert infos["intest"].description == "registered by a test"
    assert infos["intest"].distribution == ""
    bundle = pm.load_runtime("intest")
    assert bundle.name == "intest"  # filled in from the registered name
    assert pm.load_runtime("intest", name="custom").name == "custom"


def test_isolation_without_entry_points() -> None:
    pm = plugin_manager(extra_plugins=[InTestPlugin()], entry_points=False)
    assert [info.name for info in pm.runtimes()] == ["intest"]


def test_nothing_is_loaded_before_it_is_asked_for() -> None:
    pm = plugin_manager(extra_plugins=[InTestPlugin()])
    assert pm.list_name_plugin() == []
    pm.load()
    assert {"fake", "docker"} <= {name for name, _ in pm.list_name_plugin()}


def test_a_duplicate_runtime_name_is_an_error_naming_both_plugins_when_asked_for() -> None:
    pm = plugin_manager(extra_plugins=[InTestPlugin(name="fake"), InTestPlugin()])
    listed = [(info.name, info.plugin) for info in pm.runtimes()]
    assert listed.count(("fake", "fake")) == 1
    assert ("fake", "tests.test_plugins.InTestPlugin") in listed
    assert ("intest", "tests.test_plugins.InTestPlugin#2") in listed
    assert pm.broken_plugins() == []
    with pytest.raises(DuplicateRuntime) as info:
        pm.load_runtime("fake")
    message = str(info.value)
    assert "by plugin 'fake' (from kubecore " in message and "InTestPlugin'" in message
    assert "registered twice" in message and "KUBECORE_DISABLE_PLUGINS" in message
    assert isinstance(info.value, PluginError)
    assert pm.load_runtime("intest").name == "intest"  # the others keep working


def test_each_provider_of_a_duplicate_name_is_listed_with_a_note_naming_the_other() -> None:
    pm = plugin_manager(extra_plugins=[InTestPlugin(name="fake")])
    notes = {info.plugin: info.unavailable for info in pm.runtimes() if info.name == "fake"}
    assert notes["fake"].startswith("also offered by plugin 'tests.test_plugins.InTestPlugin'")
    assert notes["tests.test_plugins.InTestPlugin"].startswith(
        "also offered by plugin 'fake' (from kubecore "
    )
    assert all(info.unavailable == "" for info in pm.runtimes() if info.name != "fake")


def test_duplicate_between_two_in_test_plugins_names_both() -> None:
    first, second = InTestPlugin("same"), InTestPlugin("same")
    pm = plugin_manager(entry_points=False)
    pm.register(first, name="first")
    pm.register(second, name="second")
    assert [info.plugin for info in pm.runtimes()] == ["first", "second"]
    with pytest.raises(DuplicateRuntime, match=r"'first'.*'second'|'second'.*'first'"):
        pm.load_runtime("same")


def test_one_plugin_registering_a_name_twice_is_broken() -> None:
    class Twice:
        @hookimpl
        def kubecore_register_runtimes(self, registry: RuntimeRegistry) -> None:
            registry.register("twice", fake_bundle)
            registry.register("twice", fake_bundle)

    pm = plugin_manager(extra_plugins=[Twice(), InTestPlugin()], entry_points=False)
    with pytest.warns(PluginWarning, match="registers runtime 'twice' twice"):
        assert [info.name for info in pm.runtimes()] == ["intest"]


def test_a_misspelled_hook_is_reported_by_name_and_the_others_work() -> None:
    class Typo:
        @hookimpl
        def kubecore_register_runtime(self, registry: RuntimeRegistry) -> None:
            """Missing the final s."""

    pm = plugin_manager(extra_plugins=[Typo(), InTestPlugin()], entry_points=False)
    with pytest.warns(PluginWarning, match="kubecore_register_runtime"):
        assert [info.name for info in pm.runtimes()] == ["intest"]
    [broken] = pm.broken_plugins()
    assert broken.name.endswith("Typo")
    assert broken.error == (
        "implements kubecore_register_runtime, which is not a kubecore hook;"
        " did you mean kubecore_register_runtimes?"
    )
    assert pm.load_runtime("intest").name == "intest"


def test_registering_a_plugin_with_an_unknown_hook_directly_is_refused() -> None:
    class Typo:
        @hookimpl
        def kubecore_register_runtime(self, registry: RuntimeRegistry) -> None:
            """Missing the final s."""

    pm = plugin_manager(entry_points=False)
    plugin = Typo()
    with pytest.raises(PluginError, match=r"plugin 'typo' implements kubecore_register_runtime"):
        pm.register(plugin, name="typo")
    assert not pm.is_registered(plugin)


def test_a_plugin_without_any_hook_is_reported() -> None:
    class Unmarked:
        def kubecore_register_runtimes(self, registry: RuntimeRegistry) -> None:
            """No @hookimpl: pluggy would ignore it silently."""

    pm = plugin_manager(extra_plugins=[Unmarked()], entry_points=False)
    with pytest.warns(PluginWarning, match="implements no kubecore hook"):
        assert pm.runtimes() == []
    [broken] = pm.broken_plugins()
    assert "kubecore_register_runtimes with @hookimpl" in broken.error


def test_a_hook_with_unexpected_arguments_is_reported() -> None:
    class WrongArguments:
        @hookimpl
        def kubecore_register_runtimes(self, runtimes: RuntimeRegistry) -> None:
            """The argument must be called ``registry``."""

    pm = plugin_manager(extra_plugins=[WrongArguments(), InTestPlugin()], entry_points=False)
    with pytest.warns(PluginWarning, match="runtimes"):
        assert [info.name for info in pm.runtimes()] == ["intest"]


def test_a_factory_that_raises_is_wrapped_with_the_runtime_name() -> None:
    def broken(**options: Any) -> RuntimeBundle:
        raise OSError("engine socket missing")

    pm = plugin_manager(extra_plugins=[InTestPlugin("flaky", broken)], entry_points=False)
    with pytest.raises(PluginError, match=r"runtime 'flaky'.*engine socket missing") as info:
        pm.load_runtime("flaky")
    assert isinstance(info.value.__cause__, OSError)


def test_a_factory_must_return_a_usable_bundle() -> None:
    pm = plugin_manager(
        extra_plugins=[
            InTestPlugin("wrong-type", lambda **o: object()),
            InTestPlugin(
                "incomplete", lambda **o: RuntimeBundle(runtime=object(), puller=object())
            ),  # type: ignore[arg-type]
        ],
        entry_points=False,
    )
    with pytest.raises(PluginError, match="not a RuntimeBundle"):
        pm.load_runtime("wrong-type")
    with pytest.raises(PluginError, match=r"runtime lacks .*create_container"):
        pm.load_runtime("incomplete")


def test_a_plugin_that_fails_to_import_is_reported_without_hiding_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.metadata.entry_points(group="kubecore")
    broken = importlib.metadata.EntryPoint(
        "broken", "kubecore_no_such_module_for_tests", "kubecore"
    )

    def fake_entry_points(**kwargs: Any) -> list[importlib.metadata.EntryPoint]:
        assert kwargs == {"group": "kubecore"}
        return [broken, *real]

    monkeypatch.setattr(plugins_module.importlib.metadata, "entry_points", fake_entry_points)
    pm = plugin_manager()
    with pytest.warns(PluginWarning, match="broken.*ModuleNotFoundError"):
        names = [info.name for info in pm.runtimes()]
    assert {"docker", "fake"} <= set(names)
    broken_by_name = {plugin.name: plugin for plugin in pm.broken_plugins()}
    assert "kubecore_no_such_module_for_tests" in broken_by_name["broken"].error


def test_a_plugin_whose_hook_raises_is_broken_and_the_others_work() -> None:
    class Exploding:
        @hookimpl
        def kubecore_register_runtimes(self, registry: RuntimeRegistry) -> None:
            registry.register("half", fake_bundle)
            raise RuntimeError("kaboom")

    pm = plugin_manager(extra_plugins=[Exploding(), InTestPlugin()], entry_points=False)
    with pytest.warns(PluginWarning, match="kaboom"):
        names = [info.name for info in pm.runtimes()]
    assert names == ["intest"]  # the half-done registration is dropped
    assert [b.error for b in pm.broken_plugins()] == [
        "kubecore_register_runtimes raised RuntimeError: kaboom"
    ]


def test_invalid_runtime_names_are_refused() -> None:
    pm = plugin_manager(extra_plugins=[InTestPlugin("Bad Name")], entry_points=False)
    with pytest.warns(PluginWarning, match="invalid runtime name"):
        assert pm.runtimes() == []


def test_public_names_are_exported() -> None:
    for name in (
        "hookimpl",
        "hookspec",
        "RuntimeBundle",
        "RuntimeRegistry",
        "RuntimeInfo",
        "runtimes",
        "load_runtime",
        "plugin_manager",
    ):
        assert name in kubecore.__all__


@pytest.mark.parametrize(
    "code",
    [
        "import kubecore, sys; assert 'docker' not in sys.modules",
        "import kubecore, sys; bad = {'kubecore_docker', 'kubecore_fake'} & set(sys.modules);"
        " assert not bad, bad",
        "import kubecore, sys; kubecore.runtimes(); assert 'docker' not in sys.modules",
    ],
    ids=["import", "no-plugin-at-import", "discovery"],
)
def test_importing_kubecore_never_imports_docker(code: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_fake_options_from_the_command_line() -> None:
    bundle = load_runtime(
        "fake",
        clock="manual",
        pulled="busybox:1.36,nginx:1",
        image_fs_capacity="1000000000",
        events="false",
        node_ip="10.88.0.9",
    )
    runtime = bundle.runtime
    assert isinstance(runtime, FakeRuntime)
    assert isinstance(runtime.clock, ManualClock)
    assert len(runtime.list_images()) == 2
    assert runtime.image_fs_usage().capacity_bytes == 1_000_000_000
    assert runtime.watch_events(lambda event: None) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"colour": "blue"}, "unknown fake runtime option"),
        ({"events": "perhaps"}, "expected true or false"),
        ({"clock": "sundial"}, "expected a Clock"),
        ({"image_fs_capacity": "lots"}, "number of bytes"),
    ],
)
def test_bad_fake_options_name_the_runtime(options: dict[str, str], message: str) -> None:
    with pytest.raises(PluginError, match=rf"runtime 'fake'.*{message}"):
        load_runtime("fake", **options)
