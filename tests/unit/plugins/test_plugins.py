"""Runtime plugins: discovery through the installed entry points, isolation, errors."""

from __future__ import annotations

import configparser
import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import kubecore
from kubecore import PluginError, RuntimeRegistry, hookimpl, load_runtime, runtimes
from kubecore._plugins import registry as plugins_module
from kubecore._plugins.registry import plugin_manager
from kubecore.runtime import DuplicateRuntime, PluginWarning, RuntimeBundle, UnknownRuntime
from kubecore.testing import ManualClock
from kubecore_fake import FakeHealthChecker, FakeRuntime
from tests.paths import REPO


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
    with pytest.raises(kubecore.runtime.ImagePullError):
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
    with pytest.raises(UnknownRuntime, match=r"installed runtimes: .*\bfake\b") as refused:
        load_runtime("docker")
    assert "docker" not in str(refused.value).split("installed runtimes:")[1]


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
    assert ("fake", "tests.unit.plugins.test_plugins.InTestPlugin") in listed
    assert ("intest", "tests.unit.plugins.test_plugins.InTestPlugin#2") in listed
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
    assert notes["fake"].startswith(
        "also offered by plugin 'tests.unit.plugins.test_plugins.InTestPlugin'"
    )
    assert notes["tests.unit.plugins.test_plugins.InTestPlugin"].startswith(
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
    for name in ("hookimpl", "RuntimeRegistry", "runtimes", "load_runtime"):
        assert name in kubecore.__all__
    for name in ("hookimpl", "hookspec", "RuntimeBundle", "RuntimeInfo", "broken_plugins"):
        assert name in kubecore.runtime.__all__


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
    assert runtime.clock.virtual
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


# -- installed plugins that are broken: a throw-away distribution on sys.path ------------------

THROWAWAY_MODULES = {
    "kubecore_test_typo_plugin": '''
from kubecore import hookimpl

@hookimpl
def kubecore_register_runtime(registry):
    """Missing the final s."""
''',
    "kubecore_test_impostor_plugin": """
from kubecore import hookimpl
from kubecore_fake._plugin import create_fake_runtime

@hookimpl
def kubecore_register_runtimes(registry):
    registry.register("fake", create_fake_runtime, "another fake")
    registry.register("impostor-extra", create_fake_runtime, "works on its own")
""",
    "kubecore_test_fine_plugin": """
from kubecore import hookimpl
from kubecore_fake._plugin import create_fake_runtime

@hookimpl
def kubecore_register_runtimes(registry):
    registry.register("fine", create_fake_runtime, "a well-behaved plugin")
""",
}
THROWAWAY_ENTRY_POINTS = """\
[kubecore]
typo = kubecore_test_typo_plugin
impostor = kubecore_test_impostor_plugin
fine = kubecore_test_fine_plugin
"""


@pytest.fixture
def throwaway_site(tmp_path: Path) -> Path:
    """A directory holding a distribution ``throwaway-plugins 1.0`` with three entry points."""
    site = tmp_path / "site"
    dist_info = site / "throwaway_plugins-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: throwaway-plugins\nVersion: 1.0\n"
    )
    (dist_info / "entry_points.txt").write_text(THROWAWAY_ENTRY_POINTS)
    for module, source in THROWAWAY_MODULES.items():
        (site / f"{module}.py").write_text(textwrap.dedent(source))
    return site


@pytest.fixture
def installed_throwaway(throwaway_site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(throwaway_site))
    for module in THROWAWAY_MODULES:
        monkeypatch.delitem(sys.modules, module, raising=False)


@pytest.mark.usefixtures("installed_throwaway")
def test_installed_broken_plugins_are_reported_and_the_others_keep_working() -> None:
    pm = plugin_manager()
    with pytest.warns(PluginWarning, match="'typo' .*throwaway-plugins 1.0.* is broken"):
        infos = pm.runtimes()
    names = [info.name for info in infos]
    assert names.count("fake") == 2
    assert {"docker", "fine", "impostor-extra"} <= set(names)
    [typo] = pm.broken_plugins()
    assert (typo.name, typo.distribution) == ("typo", "throwaway-plugins 1.0")
    assert "kubecore_register_runtime, which is not a kubecore hook" in typo.error
    assert isinstance(pm.load_runtime("fine").runtime, FakeRuntime)
    assert isinstance(pm.load_runtime("impostor-extra").runtime, FakeRuntime)


@pytest.mark.usefixtures("installed_throwaway")
def test_an_installed_duplicate_is_an_error_naming_both_distributions_when_asked_for() -> None:
    with pytest.warns(PluginWarning), pytest.raises(DuplicateRuntime) as info:
        load_runtime("fake")
    message = str(info.value)
    assert "plugin 'fake' (from kubecore " in message
    assert "plugin 'impostor' (from throwaway-plugins 1.0)" in message


def test_installed_broken_plugins_never_make_the_command_print_a_traceback(
    throwaway_site: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(throwaway_site), *sys.path])}
    env.pop("KUBECORE_DISABLE_PLUGINS", None)

    def kubecore_command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kubecore", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )

    listing = kubecore_command("runtimes")
    assert listing.returncode == 0, listing.stderr
    assert "Traceback" not in listing.stdout + listing.stderr
    assert "broken plugin typo (throwaway-plugins 1.0): implements kubecore_register_runtime" in (
        listing.stdout
    )
    assert "also offered by plugin 'impostor' (from throwaway-plugins 1.0)" in listing.stdout
    pods = tmp_path / "pods"
    pods.mkdir()
    run = kubecore_command(
        "run", str(pods), "--runtime", "fake", "--once", "--root-dir", str(tmp_path / "root")
    )
    assert run.returncode != 0
    assert "Traceback" not in run.stdout + run.stderr
    assert "runtime 'fake' is registered twice" in run.stdout + run.stderr
    fine = kubecore_command(
        "run", str(pods), "--runtime", "fine", "--once", "--root-dir", str(tmp_path / "root")
    )
    assert fine.returncode == 0, fine.stdout + fine.stderr


# -- docker is an extra -------------------------------------------------------------------------


@pytest.fixture
def without_docker_py(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if docker-py were not installed: ``import docker`` fails, ``find_spec`` finds nothing."""
    monkeypatch.setitem(sys.modules, "docker", None)


@pytest.mark.usefixtures("without_docker_py")
def test_without_docker_py_the_docker_runtime_is_listed_with_how_to_install_it() -> None:
    infos = {info.name: info for info in runtimes()}
    assert infos["docker"].unavailable == (
        "docker-py is not installed: pip install 'kubecore[docker]'"
    )
    assert infos["fake"].unavailable == ""


@pytest.mark.usefixtures("without_docker_py")
def test_without_docker_py_loading_the_docker_runtime_names_the_extra() -> None:
    with pytest.raises(PluginError, match=r"runtime 'docker'.*pip install 'kubecore\[docker\]'"):
        load_runtime("docker")
    assert load_runtime("fake").name == "fake"


@pytest.mark.usefixtures("without_docker_py")
def test_without_docker_py_the_factory_itself_names_the_extra() -> None:
    from kubecore_docker._plugin import create_docker_runtime

    with pytest.raises(PluginError, match=r"pip install 'kubecore\[docker\]'") as info:
        create_docker_runtime()
    assert info.value.__cause__ is None


def test_with_docker_py_the_docker_runtime_is_available() -> None:
    infos = {info.name: info for info in runtimes()}
    assert infos["docker"].unavailable == ""


def test_without_docker_py_the_command_says_which_extra_to_install(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["docker"] = None
        from kubecore._cli import main
        sys.exit(main(sys.argv[1:]))
        """
    )

    def kubecore_command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    listing = kubecore_command("runtimes")
    assert listing.returncode == 0, listing.stderr
    assert "pip install 'kubecore[docker]'" in listing.stdout
    pods = tmp_path / "pods"
    pods.mkdir()
    run = kubecore_command(
        "run", str(pods), "--runtime", "docker", "--once", "--root-dir", str(tmp_path / "root")
    )
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "Traceback" not in output and "pip install 'kubecore[docker]'" in output


def test_docker_py_is_an_extra_and_the_tests_still_bring_it() -> None:
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    requirements = setup["options"]["install_requires"].split()
    extras = {name: value.split() for name, value in setup["options.extras_require"].items()}
    assert not any(requirement.startswith("docker") for requirement in requirements)
    assert "docker>=7.1" in extras["docker"]
    assert "docker>=7.1" in extras["test"]


def test_a_name_three_plugins_offer_names_all_three() -> None:
    pm = plugin_manager(extra_plugins=[InTestPlugin("same") for _ in range(3)], entry_points=False)
    with pytest.raises(DuplicateRuntime, match="registered 3 times") as info:
        pm.load_runtime("same")
    assert str(info.value).count("by plugin 'tests.unit.plugins.test_plugins.InTestPlugin") == 3
