"""``kubecore run``'s flags: one per ``KubeletConfig`` field, range-checked, never abbreviated;
errors are one line naming the flag, then where the help is; runtime capabilities from the
registry."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import kubecore
from kubecore._agent.admission.pod_security import HostPathRule, PodSecurityPolicy
from kubecore._cli import RUN_SETTINGS, resolve_settings
from kubecore._cli.commands import kubelet_config
from kubecore._cli.settings import CONFIG_FIELD_HELP, Setting, config_settings, field_kind
from kubecore._util.clock import Clock, ManualClock
from tests.cli.support import parsed_flags, run_cli

# --- every KubeletConfig field is a flag ------------------------------------------------------


def test_every_kubelet_config_field_has_a_flag_with_help() -> None:
    fields = attrs.fields(kubecore.KubeletConfig)
    missing_help = [f.name for f in fields if f.name not in CONFIG_FIELD_HELP]
    assert not missing_help, f"add help for {missing_help} to CONFIG_FIELD_HELP"
    no_kind = [f.name for f in fields if field_kind(f) is None]
    assert not no_kind, f"no flag type for the field types of {no_kind}"
    assert {s.config_field for s in config_settings()} == {f.name for f in fields}


def test_no_help_for_a_field_that_is_gone() -> None:
    names = {f.name for f in attrs.fields(kubecore.KubeletConfig)}
    assert set(CONFIG_FIELD_HELP) <= names


def test_a_field_without_help_would_be_caught() -> None:
    @attrs.frozen
    class Grown:
        node_name: str = "n"
        brand_new: int = 3

    assert [s.config_field for s in config_settings(Grown)] == ["node_name"]


def test_generated_flags_reach_the_kubelet_config(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("max-pods: 8\nworkers: 3\ncluster_domain: file.local\n")
    flags = parsed_flags(
        "--max-pods",
        "7",
        "--cluster-dns",
        "10.0.0.10",
        "--cluster-dns",
        "10.0.0.11",
        "--backoff-initial",
        "2.5",
        "--no-allow-privileged",
        "--resync",
        "9",
    )
    env = {"KUBECORE_WORKERS": "4", "KUBECORE_IMAGE_GC_LOW": "10"}
    settings = resolve_settings(flags, env, str(config))
    made = kubelet_config(settings)
    assert made.max_pods == 7  # flag beats file
    assert made.workers == 4  # env beats file
    assert made.cluster_domain == "file.local"
    assert made.cluster_dns == ("10.0.0.10", "10.0.0.11")
    assert made.backoff_initial == 2.5
    assert made.allow_privileged is False
    assert made.resync_interval == 9.0
    assert made.image_gc_low == 10
    assert made.pull_qps == kubecore.KubeletConfig().pull_qps


def test_list_fields_from_env_and_file(tmp_path: Path) -> None:
    env_made = kubelet_config(
        resolve_settings({}, {"KUBECORE_CLUSTER_DNS": "1.1.1.1, 8.8.8.8"}, None)
    )
    assert env_made.cluster_dns == ("1.1.1.1", "8.8.8.8")
    config = tmp_path / "c.yaml"
    config.write_text("cluster-dns: [9.9.9.9]\n")
    assert kubelet_config(resolve_settings({}, {}, str(config))).cluster_dns == ("9.9.9.9",)


def test_contradicting_settings_are_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli("run", "--once", "--image-gc-low", "90", "--image-gc-high", "80")
    assert code == 2 and "--image-gc-low" in err


def test_pod_security_flags_reach_the_policy() -> None:
    flags = parsed_flags(
        "--pod-security",
        "restricted",
        "--allowed-host-path",
        "/data/:ro",
        "--allowed-host-path",
        "/srv",
        "--allowed-host-port",
        "80",
    )
    made = kubelet_config(resolve_settings(flags, {}, None))
    assert made.pod_security_policy() == PodSecurityPolicy(
        "restricted", (HostPathRule("/data", read_only=True), HostPathRule("/srv")), ((80, 80),)
    )
    env = {"KUBECORE_ALLOWED_HOST_PATH": "/a,/b:ro", "KUBECORE_ALLOWED_HOST_PORT": "none"}
    from_env = kubelet_config(resolve_settings({}, env, None)).pod_security_policy()
    assert from_env.host_paths == (HostPathRule("/a"), HostPathRule("/b", read_only=True))
    assert from_env.host_ports == ()
    default = kubelet_config(resolve_settings({}, {}, None)).pod_security_policy()
    assert (default.level, default.host_paths, default.host_ports) == (
        "baseline",
        (),
        ((1024, 65535),),
    )


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--pod-security", "root"], ["--pod-security", "privileged, baseline, restricted"]),
        (["--allowed-host-path", "data"], ["--allowed-host-path", "absolute path"]),
        (["--allowed-host-port", "0"], ["--allowed-host-port", "from 1 to 65535"]),
    ],
)
def test_a_bad_pod_security_setting_is_a_usage_error_naming_the_flag(
    argv: list[str], words: list[str]
) -> None:
    code, _, err = run_cli("run", "--once", *argv)
    assert code == 2, err
    assert all(word in err for word in words), err


# --- ranges -------------------------------------------------------------------------------------


NUMERIC = [s for s in RUN_SETTINGS if s.bounds is not None]


def outside(setting: Setting) -> str:
    assert setting.bounds is not None
    below = setting.bounds.low if setting.bounds.open_low else setting.bounds.low - 1
    return str(int(below)) if setting.kind == "int" else f"{below:g}"


def test_every_numeric_setting_has_a_range() -> None:
    numeric = [s.option for s in RUN_SETTINGS if s.kind in ("int", "float")]
    assert numeric and [s.option for s in NUMERIC] == numeric


@pytest.mark.parametrize("setting", NUMERIC, ids=lambda s: s.option)
def test_a_value_out_of_range_is_one_line_naming_the_flag_and_range(setting: Setting) -> None:
    assert setting.bounds is not None
    code, out, err = run_cli("run", "--once", setting.option, outside(setting))
    assert code == 2 and out == ""
    last = err.splitlines()[0]
    assert last.startswith("kubecore run: error: argument ") and setting.option in last
    assert setting.bounds.describe() in last
    assert "Traceback" not in err and err.splitlines()[-1] == "see `kubecore run --help`"
    code, _, err = run_cli("run", "--once", setting.option, str(setting.bounds.high * 10 + 1))
    assert code == 2 and setting.bounds.describe() in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "99999"], "--port: must be an integer from 0 to 65535, got 99999"),
        (["--deadline", "-1"], "--deadline: must be a number greater than 0"),
        (["--deadline", "inf"], "--deadline: must be a finite number"),
        (["--resync", "nan"], "--resync: must be a finite number"),
        (["--port", "80.5"], "--port: must be an integer, got '80.5'"),
        (["--port", "9" * 5000], "--port: must be an integer"),
    ],
)
def test_nonsense_numbers(argv: list[str], message: str) -> None:
    code, _, err = run_cli("run", "--once", *argv)
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KUBECORE_PORT": "99999"}, "KUBECORE_PORT: port: must be an integer from 0 to 65535"),
        ({"KUBECORE_MAX_PODS": "0"}, "KUBECORE_MAX_PODS: max-pods: must be an integer from 1"),
    ],
)
def test_out_of_range_environment_is_a_usage_error(
    env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, _, err = run_cli("run", "--once")
    assert code == 2 and message in err


@pytest.mark.parametrize(
    "text",
    [
        "port: 99999\n",
        "port: 1e400\n",
        "deadline: -3\n",
        "port: true\n",
        "resync: .nan\n",
        "resync: 1" + "0" * 400 + "\n",
        "workers: 2.5\n",
    ],
)
def test_out_of_range_config_file_is_a_usage_error(tmp_path: Path, text: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text)
    code, _, err = run_cli("run", "--once", "--config", str(config))
    assert code == 2 and "Traceback" not in err
    assert len(err.splitlines()) == 1 and str(config) in err and len(err) < 300


# --- unknown and abbreviated flags --------------------------------------------------------------


@pytest.mark.parametrize("argv", [["--resyn", "5"], ["--resyn=5"], ["--max-pod", "3"]])
def test_abbreviations_are_refused_with_a_did_you_mean(argv: list[str]) -> None:
    code, _, err = run_cli("run", "--once", *argv)
    assert code == 2
    assert "usage:" not in err
    assert "unrecognized arguments: " + argv[0] in err
    assert "did you mean --resync?" in err or "did you mean --max-pods?" in err


def test_a_mistyped_flag_is_the_error_and_the_hint_only() -> None:
    """Not run's usage (dozens of lines of flags) before the one line that matters."""
    code, _, err = run_cli("run", "--resnyc", "5")
    assert code == 2
    assert err.splitlines() == [
        "kubecore run: error: unrecognized arguments: --resnyc (did you mean --resync?)",
        "see `kubecore run --help`",
    ]
    code, _, err = run_cli("run", "--qqqq")
    assert err.splitlines() == [
        "kubecore run: error: unrecognized arguments: --qqqq",
        "see `kubecore run --help`",
    ]


def test_unknown_arguments_of_other_commands() -> None:
    code, _, err = run_cli("validate", "x.yaml", "--strikt")
    assert code == 2 and err.startswith("kubecore validate: error: unrecognized arguments")
    assert err.endswith("see `kubecore validate --help`\n")
    code, _, err = run_cli("runtimes", "--al")
    assert code == 2 and err.startswith("kubecore runtimes: error: unrecognized arguments")


def test_an_unknown_command_suggests_one() -> None:
    code, _, err = run_cli("valdate", "x.yaml")
    assert code == 2 and "did you mean validate?" in err


# --- capabilities from the registry, warnings shown --------------------------------------------


def _with_plugins(monkeypatch: pytest.MonkeyPatch, *plugins: object) -> None:
    import kubecore._plugins.registry as plugin_module

    real = plugin_module.plugin_manager
    monkeypatch.setattr(
        plugin_module,
        "plugin_manager",
        lambda *a, **k: real(extra_plugins=list(plugins), entry_points=True),
    )


class _Recording:
    """Offers the in-memory runtime under other names, recording the options each gets."""

    def __init__(self) -> None:
        self.options: dict[str, dict[str, Any]] = {}

    @kubecore.hookimpl
    def kubecore_register_runtimes(self, registry: Any) -> None:
        from kubecore_fake._plugin import create_fake_runtime

        def factory(name: str) -> Any:
            def make(**options: Any) -> Any:
                self.options[name] = options
                return create_fake_runtime(**options)

            return make

        registry.register("memory-vt", factory("memory-vt"), "virtual", virtual_time=True)
        registry.register("memory-rt", factory("memory-rt"), "real time only")


def _empty_run(tmp_path: Path, runtime: str, *extra: str) -> tuple[int, str, str]:
    empty = tmp_path / "pods"
    empty.mkdir(exist_ok=True)
    return run_cli(
        "run",
        str(empty),
        "--runtime",
        runtime,
        "--root-dir",
        str(tmp_path / "root"),
        "--log-level",
        "error",
        *extra,
    )


def test_once_runs_in_virtual_time_when_the_registry_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = _Recording()
    _with_plugins(monkeypatch, recording)
    code, out, err = _empty_run(tmp_path, "memory-vt", "--once")
    assert code == 0, out + err
    clock: Clock = recording.options["memory-vt"]["clock"]
    assert isinstance(clock, ManualClock)
    code, out, err = _empty_run(tmp_path, "memory-rt", "--once")
    assert code == 0, out + err
    assert "clock" not in recording.options["memory-rt"]


def test_a_broken_plugins_warning_is_one_line_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Boom:
        @kubecore.hookimpl
        def kubecore_register_runtimes(self, registry: Any) -> None:
            raise RuntimeError("cannot reach the engine library")

    _with_plugins(monkeypatch, Boom())
    code, out, err = _empty_run(tmp_path, "fake", "--once")
    assert code == 0, out + err
    lines = [line for line in err.splitlines() if "cannot reach the engine library" in line]
    assert len(lines) == 1 and lines[0].startswith("kubecore: warning: ")
    code, out, err = run_cli("runtimes")
    assert "cannot reach the engine library" in out and "cannot reach" not in err


def test_python_dash_m_kubecore() -> None:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "kubecore", "run", "--resyn", "5"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "did you mean --resync?" in result.stderr and "Traceback" not in result.stderr
