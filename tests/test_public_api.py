"""The public surface: one table (``kubecore._util.exports.SURFACE``) makes every namespace's
``__all__``, ``kubecore.__all__`` is the curated list, every public name shows its public home and
says what it is for, and the in-tree adapters, examples and benchmarks use only public names, as a
plugin does."""

import ast
import enum
import importlib
import inspect
import pickle
import pkgutil
import pydoc
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest

import kubecore
from kubecore._util.exports import SURFACE, public_home
from tests.paths import REPO

EXPECTED_ALL = [
    "ChangeSubscription",
    "ContainerRuntime",
    "ContainerRuntimeError",
    "EventChange",
    "EventRecorder",
    "FellBehind",
    "FieldError",
    "FileSource",
    "HTTPSource",
    "HealthChecker",
    "InvalidKubeletConfig",
    "KubecoreError",
    "Kubelet",
    "KubeletConfig",
    "NodeNameInUse",
    "Operation",
    "PluginError",
    "Pod",
    "PodChange",
    "PodConfig",
    "PodReport",
    "PodSource",
    "PodUpdate",
    "Puller",
    "RootDirInUse",
    "RuntimeRegistry",
    "SourcePoller",
    "SourceProblem",
    "SourceUnavailable",
    "StaticSource",
    "SubscriptionClosed",
    "SyncReport",
    "ValidationError",
    "hookimpl",
    "load_pods_from_file",
    "load_pods_from_string",
    "load_runtime",
    "pod_settled",
    "pod_verdict",
    "runtimes",
]
"""What embedding the agent needs; a name added to the top level is a decision, made here."""

NAMESPACES = [
    "aio",
    "cli",
    "credentials",
    "events",
    "manifest",
    "runtime",
    "server",
    "streaming",
    "testing",
    "v1",
]
"""The public namespaces below ``kubecore``; every other module is private (``_`` names) but the
CLI entry (``__main__``)."""

ROOT = REPO
CLIENT_TREES = [
    "kubecore_docker",
    "kubecore_fake",
    "kubecore_cri",
    "kubecore_etcd",
    "examples",
    "benchmarks",
]
"""The in-tree plugins (every one), examples and benchmarks: they use kubecore as a plugin or a
user would."""


def namespace(name: str) -> ModuleType:
    return importlib.import_module(f"kubecore.{name}")


def public_namespaces() -> list[ModuleType]:
    return [kubecore, *(namespace(name) for name in NAMESPACES)]


def exported(module: ModuleType) -> list[tuple[str, object]]:
    return [(name, getattr(module, name)) for name in module.__all__]


def defined_objects(module: ModuleType) -> list[tuple[str, object]]:
    """The classes and functions a public module exports (constants and markers have no home)."""
    return [
        (name, value)
        for name, value in exported(module)
        if inspect.isclass(value) or inspect.isfunction(value)
    ]


def test_all_is_the_curated_list() -> None:
    assert kubecore.__all__ == EXPECTED_ALL
    assert sorted(EXPECTED_ALL) == EXPECTED_ALL


def test_the_public_modules_are_the_namespaces_of_the_table() -> None:
    public = sorted(
        module.name
        for module in pkgutil.iter_modules(kubecore.__path__)
        if not module.name.startswith("_")
    )
    assert public == NAMESPACES
    assert [f"kubecore.{name}" for name in NAMESPACES] == sorted(set(SURFACE) - {"kubecore"})


@pytest.mark.parametrize("module", ["kubecore", *(f"kubecore.{name}" for name in NAMESPACES)])
def test_every_all_is_the_table(module: str) -> None:
    public = importlib.import_module(module)
    assert public.__all__ == sorted(SURFACE[module])
    for name in public.__all__:
        assert hasattr(public, name), f"{module}.{name}"


def test_the_type_checking_imports_are_written_from_the_table() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_exports.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout


@pytest.mark.parametrize("module", public_namespaces(), ids=lambda m: m.__name__)
def test_all_lists_every_public_name_a_namespace_holds(module: ModuleType) -> None:
    exported(module)  # every name imported, so each is in the namespace's globals
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(module.__all__)


def test_v1_holds_every_model_class() -> None:
    models = importlib.import_module("kubecore._model.v1")
    classes = {
        name
        for name, value in vars(models).items()
        if inspect.isclass(value) and value.__module__ in (models.__name__, "kubecore.v1")
    }
    classes |= {name for name in kubecore.v1.__all__ if name == "Pod"}
    assert classes <= set(kubecore.v1.__all__)
    for name in ("Toleration", "HostAlias", "GRPCAction", "Pod", "ConfigMap", "Secret"):
        assert name in kubecore.v1.__all__


def test_the_four_seams_are_importable_from_kubecore_and_their_namespace() -> None:
    from kubecore import ContainerRuntime, EventRecorder, HealthChecker, Puller
    from kubecore.events import EventRecorder as Recorder
    from kubecore.runtime import ContainerRuntime as Runtime
    from kubecore.runtime import HealthChecker as Checker
    from kubecore.runtime import Puller as ImageService

    assert (ContainerRuntime, Puller, HealthChecker, EventRecorder) == (
        Runtime,
        ImageService,
        Checker,
        Recorder,
    )


def test_the_runtime_contract_is_made_of_small_protocols() -> None:
    from kubecore import runtime

    parts = (
        runtime.RuntimeVersioner,
        runtime.PodSandboxManager,
        runtime.ContainerManager,
        runtime.ContainerStatsManager,
        runtime.RuntimeEventSource,
    )
    assert set(parts) <= set(runtime.ContainerRuntime.__mro__)
    fake = importlib.import_module("kubecore_fake").FakeRuntime()
    try:
        assert all(isinstance(fake, part) for part in (*parts, runtime.ContainerRuntime))
        assert runtime.capabilities(fake)[:3] == (
            runtime.ResourceUpdater,
            runtime.NodeClaims,
            runtime.StreamingRuntime,
        )
        assert runtime.PortForwarder in runtime.capabilities(fake)
    finally:
        fake.close()
    assert runtime.capabilities(object()) == ()
    assert isinstance(object(), runtime.RuntimeVersioner) is False


def test_import_kubecore_imports_no_namespace_until_it_is_used() -> None:
    code = (
        "import kubecore, sys\n"
        f"loaded = [n for n in {NAMESPACES!r} if f'kubecore.{{n}}' in sys.modules]\n"
        "assert not loaded, loaded\n"
        "heavy = {'kubecore._agent.kubelet', 'kubecore._http.server', 'kubecore._model.v1',\n"
        "         'prometheus_client', 'docker', 'yaml', 'inspect'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "import kubecore.runtime, kubecore.v1\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "assert kubecore.v1.parse_quantity.__module__ == 'kubecore.v1'\n"
        "assert 'kubecore._model.quantity' in sys.modules\n"
        "assert kubecore.Kubelet.__module__ == 'kubecore'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_name_of_both_homes_shows_kubecore_when_its_namespace_is_imported_first() -> None:
    code = (
        "from kubecore.v1 import Pod\n"
        "from kubecore.runtime import ContainerRuntime\n"
        "assert Pod.__module__ == 'kubecore', Pod.__module__\n"
        "assert ContainerRuntime.__module__ == 'kubecore', ContainerRuntime.__module__\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_namespace_is_reachable_as_an_attribute() -> None:
    for name in NAMESPACES:
        assert getattr(kubecore, name).__name__ == f"kubecore.{name}"
    with pytest.raises(AttributeError):
        kubecore.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        kubecore.v1.no_such_name  # noqa: B018


def test_every_error_is_defined_in_one_module() -> None:
    errors = [
        value
        for module in public_namespaces()
        if module is not kubecore.testing  # its NotReached is a test's AssertionError
        for _, value in exported(module)
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
    assert kubecore.runtime.ImageNeverPull in defined_in_kubecore
    for error in defined_in_kubecore:
        assert errors_module.get(error.__name__) is error, f"{error.__module__}.{error.__name__}"


@pytest.mark.parametrize("module", public_namespaces(), ids=lambda m: m.__name__)
def test_public_objects_show_their_public_home(module: ModuleType) -> None:
    for name, value in defined_objects(module):
        home = getattr(value, "__module__", None)
        assert home == public_home(name), f"{module.__name__}.{name} shows {home}"
        assert not home.startswith("kubecore._"), f"{module.__name__}.{name}"


def test_public_objects_pickle_and_repr_under_their_public_home() -> None:
    v1 = kubecore.v1
    pod = kubecore.Pod(
        metadata=v1.ObjectMeta(name="web"),
        spec=v1.PodSpec(containers=[v1.Container(name="c", image="busybox")]),
    )
    assert pickle.loads(pickle.dumps(pod)) == pod
    assert repr(pod).startswith("Pod(metadata=ObjectMeta(name='web'")
    running = kubecore.runtime.RuntimeState.RUNNING
    assert pickle.loads(pickle.dumps(running)) is running
    mapping = kubecore.runtime.PortMapping(container_port=80, host_port=8080)
    assert pickle.loads(pickle.dumps(mapping)) == mapping
    assert pickle.loads(pickle.dumps(v1.cpu_millis)) is v1.cpu_millis
    assert repr(kubecore.Pod) == "<class 'kubecore.Pod'>"
    assert repr(v1.Toleration) == "<class 'kubecore.v1.Toleration'>"


@pytest.mark.parametrize(
    "error",
    [
        kubecore.ValidationError([kubecore.FieldError("spec.containers", "required")], "a.yaml"),
        kubecore.manifest.DocumentError(
            [kubecore.FieldError("metadata.name", "required")],
            "a.yaml",
            document=2,
            item=1,
            pod_name="web",
        ),
        kubecore.runtime.UnknownRuntime("podman", ["docker", "fake"]),
        kubecore.runtime.Conflict("name in use"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_errors_survive_pickling(error: Exception) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)


def test_type_hints_of_public_classes_still_resolve() -> None:
    hints = typing.get_type_hints(kubecore.v1.Container)
    assert hints["image_pull_policy"] == typing.Literal["Always", "IfNotPresent", "Never"]
    for module in public_namespaces():
        for _, value in defined_objects(module):
            if inspect.isclass(value):
                typing.get_type_hints(value)  # raises NameError for an unresolvable name


# --- every public name says what it is for ---------------------------------------------------


def own_docstring(value: object) -> str:
    """The docstring written for ``value`` itself (not one a base class or ``attrs`` gave)."""
    if inspect.isclass(value):
        return (vars(value).get("__doc__") or "").strip()
    return (getattr(value, "__doc__", None) or "").strip()


def attribute_docstrings(module: str) -> dict[str, str]:
    """``NAME = value`` followed by a string, in a module's source: the attribute's docstring."""
    tree = ast.parse(Path(importlib.import_module(module).__file__ or "").read_text())
    docs = {}
    for assign, after in zip(tree.body, tree.body[1:], strict=False):
        targets = assign.targets if isinstance(assign, ast.Assign) else []
        if isinstance(assign, ast.AnnAssign):
            targets = [assign.target]
        constant = after.value if isinstance(after, ast.Expr) else None
        text = constant.value if isinstance(constant, ast.Constant) else None
        if isinstance(text, str):
            docs |= {t.id: text for t in targets if isinstance(t, ast.Name)}
    return docs


def public_names() -> list[tuple[str, str, str]]:
    """``(namespace, name, home module)`` of every public name."""
    return [(ns, name, home) for ns, names in SURFACE.items() for name, home in names.items()]


def test_every_public_name_has_a_docstring() -> None:
    undocumented = []
    for ns, name, home in public_names():
        value = getattr(importlib.import_module(ns), name)
        if callable(value) and hasattr(value, "__wrapped__"):  # functools.cache and the like
            value = inspect.unwrap(value)
        if inspect.isclass(value) or inspect.isfunction(value):
            documented = bool(own_docstring(value))
        else:  # a constant, a marker or a type alias: its docstring follows it in its home
            documented = bool(attribute_docstrings(home).get(name, "").strip())
        if not documented:
            undocumented.append(f"{ns}.{name}")
    assert undocumented == []


def test_every_protocol_method_states_its_contract() -> None:
    silent = []
    for ns, name, _ in public_names():
        value = getattr(importlib.import_module(ns), name)
        if inspect.isclass(value) and getattr(value, "_is_protocol", False):
            for method, member in vars(value).items():
                public = inspect.isfunction(member) and not method.startswith("_")
                if public and not own_docstring(member):
                    silent.append(f"{ns}.{name}.{method}")
    assert silent == []


PLUGIN_PACKAGES = ("kubecore_docker", "kubecore_fake", "kubecore_cri", "kubecore_etcd")
"""The packages beside kubecore whose ``__all__`` is public too."""
TEST_KIT = ("kubecore.testing.conformance", "kubecore.testing.strategies")


def public_protocols() -> list[type]:
    """Every protocol of the public surface (the contracts a class may implement)."""
    found = []
    for ns, name, _ in public_names():
        value = getattr(importlib.import_module(ns), name)
        if inspect.isclass(value) and getattr(value, "_is_protocol", False):
            found.append(value)
    return found


def _function_of(member: object) -> object:
    if isinstance(member, staticmethod | classmethod):
        return member.__func__
    if isinstance(member, property):
        return member.fget
    return member


def documented_by_a_contract(cls: type, method: str, protocols: list[type]) -> bool:
    """Whether ``method`` of ``cls`` implements a kubecore contract that documents it: a
    kubecore base class of ``cls`` that defines it with a docstring, or a public protocol whose
    methods ``cls`` all has (the docstring of ``typing.Protocol``, ``object`` or attrs never
    counts: none of them is kubecore's)."""
    for base in cls.__mro__[1:]:
        defined = base.__module__.startswith("kubecore") and method in vars(base)
        if defined and own_docstring(_function_of(vars(base)[method])):
            return True
    for protocol in protocols:
        methods = [n for n, m in vars(protocol).items() if _is_public_method(n, m)]
        implemented = method in methods and all(hasattr(cls, n) for n in methods)
        if implemented and own_docstring(_function_of(vars(protocol)[method])):
            return True
    return False


def _is_public_method(name: str, member: object) -> bool:
    function = _function_of(member)
    return not name.startswith("_") and inspect.isfunction(function)


def public_classes() -> list[tuple[str, type]]:
    """``(dotted name, class)`` of every public class: the surface's, the plugin packages' and
    the test kit's (each once)."""
    seen: set[int] = set()
    found = []
    namespaces = [*SURFACE, *PLUGIN_PACKAGES, *TEST_KIT]
    for ns in namespaces:
        module = importlib.import_module(ns)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and id(value) not in seen:
                seen.add(id(value))
                found.append((f"{ns}.{name}", value))
    return found


def test_every_public_method_of_a_public_class_has_a_docstring() -> None:
    protocols = public_protocols()
    silent = []
    for dotted, cls in public_classes():
        if issubclass(cls, enum.Enum | BaseException):
            continue  # members, not methods; an error's message says what it is
        for name, member in vars(cls).items():
            if not _is_public_method(name, member):
                continue
            if own_docstring(_function_of(member)):
                continue
            if not documented_by_a_contract(cls, name, protocols):
                silent.append(f"{dotted}.{name}")
    assert silent == []


@pytest.mark.parametrize("package", [*PLUGIN_PACKAGES, *TEST_KIT])
def test_every_name_of_a_plugin_package_and_of_the_test_kit_has_a_docstring(
    package: str,
) -> None:
    module = importlib.import_module(package)
    assert module.__all__, package
    assert own_docstring(module), package
    homes = (
        [
            m.name
            for m in pkgutil.walk_packages(module.__path__, f"{package}.")
            if "._pb" not in m.name
        ]
        if hasattr(module, "__path__")
        else [package]
    )
    constants: dict[str, str] = {}
    for home in [package, *homes]:
        constants |= attribute_docstrings(home)
    undocumented = []
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            documented = bool(own_docstring(inspect.unwrap(value)))
        else:
            documented = bool(constants.get(name, "").strip())
        if not documented:
            undocumented.append(f"{package}.{name}")
    assert undocumented == []


def test_the_method_check_catches_a_silent_method() -> None:
    class Silent:
        """Has one method without a word."""

        def quiet(self) -> None:
            pass

    assert not own_docstring(Silent.quiet)
    assert not documented_by_a_contract(Silent, "quiet", public_protocols())


def test_a_plain_implementation_is_documented_by_the_protocol_it_implements() -> None:
    from kubecore_fake import FakeRuntime

    assert documented_by_a_contract(FakeRuntime, "run_sandbox", public_protocols())


def test_help_on_a_protocol_prints_its_contract() -> None:
    text = pydoc.render_doc(kubecore.ContainerRuntime, renderer=pydoc.plaintext)
    assert "conformance" in text
    assert "idempotent" in text.lower()
    assert "Base class for protocol classes" not in text  # typing.Protocol's own docstring
    for protocol in public_protocols():
        assert own_docstring(protocol), protocol.__qualname__
        for name, member in vars(protocol).items():
            if _is_public_method(name, member):
                assert own_docstring(_function_of(member)), f"{protocol.__qualname__}.{name}"


def test_the_docstring_check_reads_attribute_docstrings() -> None:
    docs = attribute_docstrings("kubecore._contract.capabilities")
    assert "OPTIONAL_CAPABILITIES" in docs


# --- the adapters, examples and benchmarks use only public names ------------------------------


def python_files(tree: str) -> list[Path]:
    return sorted((ROOT / tree).rglob("*.py"))


def private_uses(source: str) -> list[str]:
    """Each import (or ``kubecore._x`` attribute) in ``source`` that reaches past the public
    surface: a private kubecore module, or a name a public namespace does not export."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                f"import {a.name}"
                for a in node.names
                if a.name.startswith("kubecore.")
                and a.name not in SURFACE
                and not a.name.startswith("kubecore.testing.")
            ]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = node.module
            if module == "kubecore" or module.startswith("kubecore."):
                for alias in node.names:
                    if not _public_import(module, alias.name):
                        found.append(f"from {module} import {alias.name}")
        elif _private_attribute(node):
            found.append(f"kubecore.{getattr(node, 'attr', '')}")
    return found


def _private_attribute(node: ast.AST) -> bool:
    """``kubecore._x`` (not a dunder such as ``kubecore.__version__``)."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return False
    return node.value.id == "kubecore" and node.attr.startswith("_") and node.attr[1] != "_"


TESTING_MODULES = {"kubecore.testing.conformance", "kubecore.testing.strategies"}
"""The test kit's public submodules: they define their names themselves."""


def _public_import(module: str, name: str) -> bool:
    if module in TESTING_MODULES:
        return not name.startswith("_")
    if module not in SURFACE:
        return False
    below = {public.rpartition(".")[2] for public in SURFACE if public.startswith(f"{module}.")}
    return name in SURFACE[module] or name in below or name == "__version__"


@pytest.mark.parametrize("tree", CLIENT_TREES)
def test_adapters_examples_and_benchmarks_import_only_public_names(tree: str) -> None:
    files = python_files(tree)
    assert files, f"no Python files under {tree}"
    offenders = [
        f"{path.relative_to(ROOT)}: {use}"
        for path in files
        for use in private_uses(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_private_import_check_finds_a_private_import() -> None:
    assert private_uses("def f():\n    from kubecore._contract.values import Image\n")
    assert private_uses("import kubecore._contract.errors\n")
    assert private_uses("from kubecore import _model as m\n")
    assert private_uses("from kubecore import Container\n")  # kubecore.v1's, not kubecore's
    assert private_uses("import kubecore\nkubecore._util.clock\n")
    assert not private_uses("from kubecore.runtime import POD_UID_LABEL\nimport kubecore.v1\n")
    assert not private_uses("from kubecore import v1, Kubelet, __version__\n")
    assert not private_uses("from kubecore.testing.conformance import RuntimeConformance\n")
    assert not private_uses("from kubecore_docker._client import DockerOptions\n")


def test_importing_kubecore_never_imports_docker() -> None:
    code = "import kubecore, sys; assert 'docker' not in sys.modules, 'docker was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
