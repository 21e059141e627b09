"""The public surface: ``kubecore.__all__`` is the curated list, every public name shows its
public home, and the in-tree adapters and examples use only public modules, as a plugin does."""

import importlib
import inspect
import pickle
import pkgutil
import re
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest

import kubecore
from tests.paths import REPO

EXPECTED_ALL = [
    "Clock",
    "Conflict",
    "Container",
    "ContainerConfig",
    "ContainerNotFound",
    "ContainerPort",
    "ContainerRuntime",
    "ContainerRuntimeError",
    "ContainerState",
    "ContainerStateRunning",
    "ContainerStateTerminated",
    "ContainerStateWaiting",
    "ContainerStats",
    "ContainerStatus",
    "CreateContainerConfigError",
    "DNSConfig",
    "DocumentError",
    "DuplicateRuntime",
    "EmptyDirVolumeSource",
    "EnvVar",
    "ExecAction",
    "ExecResult",
    "FieldError",
    "FileSource",
    "HTTPGetAction",
    "HTTPHeader",
    "HTTPSource",
    "HealthChecker",
    "HostPathVolumeSource",
    "Image",
    "ImageFsUsage",
    "ImageNeverPull",
    "ImageNotFound",
    "ImagePullError",
    "InvalidConfig",
    "InvalidKubeletConfig",
    "KubecoreError",
    "Kubelet",
    "KubeletConfig",
    "Lifecycle",
    "LifecycleHandler",
    "LocalObjectReference",
    "ManualClock",
    "Mount",
    "NodeClaim",
    "NodeClaims",
    "NodeHolder",
    "NodeLease",
    "NodeNameInUse",
    "NotFound",
    "ObjectMeta",
    "Operation",
    "PluginError",
    "PluginWarning",
    "Pod",
    "PodCondition",
    "PodSource",
    "PodSpec",
    "PodStatus",
    "PodUpdate",
    "PortMapping",
    "Probe",
    "ProbeOutcome",
    "ProbeResult",
    "ProbeTarget",
    "PullProgress",
    "Puller",
    "PullerWrapper",
    "RegistryAuth",
    "RegistryConfigError",
    "ResourceRequirements",
    "RootDirInUse",
    "RuntimeBase",
    "RuntimeBundle",
    "RuntimeContainer",
    "RuntimeEvent",
    "RuntimeEventType",
    "RuntimeInfo",
    "RuntimeRegistry",
    "RuntimeSandbox",
    "RuntimeSnapshot",
    "RuntimeState",
    "RuntimeTimeout",
    "RuntimeUnavailable",
    "RuntimeVersion",
    "SandboxConfig",
    "SandboxNotFound",
    "SandboxState",
    "SandboxUnusable",
    "SecurityContext",
    "SourceUnavailable",
    "StaticSource",
    "Subscription",
    "SyncReport",
    "SystemClock",
    "TCPSocketAction",
    "TimerHandle",
    "TokenBucket",
    "UnknownRuntime",
    "ValidationError",
    "Volume",
    "VolumeMount",
    "hookimpl",
    "load_pods_from_file",
    "load_pods_from_string",
    "load_runtime",
    "pod_settled",
    "pod_verdict",
    "runtimes",
]

NOT_NAMESPACES = {"__main__", "testing"}
"""Public modules that are not re-export namespaces: the CLI entry, and the test kit (which
imports hypothesis and pytest, so ``import kubecore`` does not load it)."""


def public_modules() -> list[str]:
    return sorted(
        module.name
        for module in pkgutil.iter_modules(kubecore.__path__)
        if not module.name.startswith("_") and module.name not in NOT_NAMESPACES
    )


NAMESPACES = public_modules()

ROOT = REPO
PLUGIN_TREES = ["kubecore_docker", "kubecore_fake", "kubecore_etcd", "examples"]
PRIVATE_IMPORT = re.compile(
    r"^\s*(?:(?:from|import)\s+kubecore\._\w*|from\s+kubecore\s+import\s+\(?\s*_\w*)", re.MULTILINE
)


def namespace(name: str) -> ModuleType:
    return importlib.import_module(f"kubecore.{name}")


def defined_objects(module: ModuleType) -> list[tuple[str, object]]:
    """The classes and functions a public module exports (constants and markers have no home)."""
    return [
        (name, getattr(module, name))
        for name in module.__all__
        if inspect.isclass(getattr(module, name)) or inspect.isfunction(getattr(module, name))
    ]


def test_all_is_the_curated_list() -> None:
    assert kubecore.__all__ == EXPECTED_ALL
    assert sorted(EXPECTED_ALL) == EXPECTED_ALL


def test_all_lists_every_public_name_imported() -> None:
    public = {
        name
        for name in dir(kubecore)
        if not name.startswith("_") and not inspect.ismodule(getattr(kubecore, name))
    }
    assert public == set(kubecore.__all__)


@pytest.mark.parametrize("name", NAMESPACES)
def test_namespace_all_is_sorted_and_every_name_resolves(name: str) -> None:
    module = namespace(name)
    assert module.__all__ == sorted(module.__all__)
    for exported in module.__all__:
        assert hasattr(module, exported), f"kubecore.{name}.{exported}"


@pytest.mark.parametrize("name", NAMESPACES)
def test_namespace_all_lists_every_public_name_imported(name: str) -> None:
    module = namespace(name)
    public = {
        exported
        for exported, value in vars(module).items()
        if not exported.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(module.__all__)


def test_the_namespaces_are_found() -> None:
    assert {"labels", "manifest", "quantity", "translate"} <= set(NAMESPACES)


def test_import_kubecore_imports_no_namespace_until_it_is_used() -> None:
    code = (
        "import kubecore, sys\n"
        f"loaded = [n for n in {NAMESPACES!r} if f'kubecore.{{n}}' in sys.modules]\n"
        "assert not loaded, loaded\n"
        "heavy = {'kubecore._agent.kubelet', 'kubecore._http.server',\n"
        "         'prometheus_client', 'docker', 'yaml'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "assert kubecore.quantity.parse_quantity.__module__ == 'kubecore.quantity'\n"
        "assert 'kubecore.quantity' in sys.modules\n"
        "assert kubecore.Kubelet.__module__ == 'kubecore'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_name_of_both_homes_shows_kubecore_when_its_namespace_is_imported_first() -> None:
    code = (
        "from kubecore.manifest import load_pods_from_file\n"
        "assert load_pods_from_file.__module__ == 'kubecore', load_pods_from_file.__module__\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_namespace_is_reachable_as_an_attribute() -> None:
    for name in NAMESPACES:
        assert getattr(kubecore, name).__name__ == f"kubecore.{name}"
    with pytest.raises(AttributeError):
        kubecore.no_such_name  # noqa: B018


def test_every_error_is_defined_in_one_module() -> None:
    errors = [
        value
        for value in vars(kubecore).values()
        if inspect.isclass(value) and issubclass(value, (Exception, Warning))
    ]
    assert errors
    errors_module = vars(importlib.import_module("kubecore._contract.errors"))
    for error in errors:
        assert errors_module.get(error.__name__) is error, error.__name__


def all_subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *all_subclasses(sub)}
    return found


def test_no_kubecore_module_defines_an_error_outside_errors() -> None:
    for module in pkgutil.walk_packages(kubecore.__path__, "kubecore."):
        if module.name != "kubecore.__main__":
            importlib.import_module(module.name)
    errors_module = vars(importlib.import_module("kubecore._contract.errors"))
    defined_in_kubecore = [
        error
        for error in all_subclasses(kubecore.KubecoreError)
        if error.__module__ == "kubecore" or error.__module__.startswith("kubecore.")
    ]
    assert kubecore.ImageNeverPull in defined_in_kubecore
    for error in defined_in_kubecore:
        assert errors_module.get(error.__name__) is error, f"{error.__module__}.{error.__name__}"


def test_top_level_objects_show_kubecore_as_their_module() -> None:
    for name, value in defined_objects(kubecore):
        assert getattr(value, "__module__", None) == "kubecore", name


@pytest.mark.parametrize("name", NAMESPACES)
def test_namespace_objects_show_a_public_home(name: str) -> None:
    module = namespace(name)
    for exported, value in defined_objects(module):
        home = getattr(value, "__module__", None)
        expected = "kubecore" if exported in kubecore.__all__ else module.__name__
        assert home == expected, f"kubecore.{name}.{exported} shows {home}"


def test_no_private_module_shows_through_a_public_name() -> None:
    for module in [kubecore, *(namespace(name) for name in NAMESPACES)]:
        for exported, value in defined_objects(module):
            home = getattr(value, "__module__", "")
            assert not home.startswith("kubecore._"), f"{module.__name__}.{exported}"


def test_public_objects_pickle_and_repr_under_their_public_home() -> None:
    pod = kubecore.Pod(
        metadata=kubecore.ObjectMeta(name="web"),
        spec=kubecore.PodSpec(containers=[kubecore.Container(name="c", image="busybox")]),
    )
    assert pickle.loads(pickle.dumps(pod)) == pod
    assert repr(pod).startswith("Pod(metadata=ObjectMeta(name='web'")
    running = kubecore.RuntimeState.RUNNING
    assert pickle.loads(pickle.dumps(running)) is running
    entry = kubecore.planner.BackoffEntry(delay=10.0, until=20.0, last_failure=10.0)
    assert pickle.loads(pickle.dumps(entry)) == entry
    assert pickle.loads(pickle.dumps(kubecore.quantity.cpu_millis)) is kubecore.quantity.cpu_millis
    assert repr(kubecore.Pod) == "<class 'kubecore.Pod'>"


@pytest.mark.parametrize(
    "error",
    [
        kubecore.ValidationError([kubecore.FieldError("spec.containers", "required")], "a.yaml"),
        kubecore.DocumentError(
            [kubecore.FieldError("metadata.name", "required")],
            "a.yaml",
            document=2,
            item=1,
            pod_name="web",
        ),
        kubecore.UnknownRuntime("podman", ["docker", "fake"]),
        kubecore.Conflict("name in use"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_errors_survive_pickling(error: Exception) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)


def test_type_hints_of_public_classes_still_resolve() -> None:
    hints = typing.get_type_hints(kubecore.Container)
    assert hints["image_pull_policy"] == typing.Literal["Always", "IfNotPresent", "Never"]
    for module in [kubecore, *(namespace(name) for name in NAMESPACES)]:
        for _, value in defined_objects(module):
            if inspect.isclass(value):
                typing.get_type_hints(value)  # raises NameError for an unresolvable name


def python_files(tree: str) -> list[Path]:
    return sorted((ROOT / tree).rglob("*.py"))


@pytest.mark.parametrize("tree", PLUGIN_TREES)
def test_adapters_and_examples_import_only_public_modules(tree: str) -> None:
    files = python_files(tree)
    assert files, f"no Python files under {tree}"
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
        for path in files
        for match in PRIVATE_IMPORT.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_private_import_check_finds_a_private_import() -> None:
    assert PRIVATE_IMPORT.search("x = 1\n    from kubecore._contract.runtime import Image\n")
    assert PRIVATE_IMPORT.search("import kubecore._contract.errors\n")
    assert PRIVATE_IMPORT.search("from kubecore import _model as m\n")
    assert not PRIVATE_IMPORT.search("from kubecore.labels import POD_UID_LABEL\n")
    assert not PRIVATE_IMPORT.search("from kubecore_docker._client import DockerOptions\n")


def test_importing_kubecore_never_imports_docker() -> None:
    code = "import kubecore, sys; assert 'docker' not in sys.modules, 'docker was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
