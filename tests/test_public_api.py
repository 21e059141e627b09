"""The public surface: ``kubecore.__all__`` is complete, importable and free of private names."""

import inspect
import subprocess
import sys

import kubecore


def test_every_exported_name_resolves() -> None:
    for name in kubecore.__all__:
        assert hasattr(kubecore, name), name


def test_all_lists_every_public_name_imported() -> None:
    public = {
        name
        for name, value in vars(kubecore).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(kubecore.__all__)


def test_exported_objects_come_from_kubecore_itself() -> None:
    for name in kubecore.__all__:
        value = getattr(kubecore, name)
        module = getattr(value, "__module__", None)
        if module is not None and (inspect.isclass(value) or inspect.isfunction(value)):
            assert module.startswith("kubecore."), f"{name} comes from {module}"


def test_importing_kubecore_never_imports_docker() -> None:
    code = "import kubecore, sys; assert 'docker' not in sys.modules, 'docker was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
