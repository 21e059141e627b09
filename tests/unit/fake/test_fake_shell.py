"""The in-memory runtime's reading of container commands: common commands finish, anything it
cannot interpret ends with an "unsupported by the fake runtime" exit instead of hanging."""

from __future__ import annotations

import pytest

from kubecore_fake._shell import (
    UNSUPPORTED,
    UNSUPPORTED_EXIT_CODE,
    DirLister,
    Program,
    TimedFile,
    TimedLog,
    read_program,
)


def sh(script: str) -> tuple[str, ...]:
    return ("sh", "-c", script)


def logs(program: Program) -> list[str]:
    return [item.line for item in program.timeline if isinstance(item, TimedLog)]


def files(program: Program) -> dict[str, str | None]:
    return {i.path: i.content for i in program.timeline if isinstance(i, TimedFile)}


def test_an_init_containers_wget_finishes_and_writes_its_output_file() -> None:
    """The docs' init container: ``wget -O /work-dir/index.html http://info.cern.ch``."""
    program = read_program(
        ("wget", "-O", "/work-dir/index.html", "http://info.cern.ch"), {}, is_init=True
    )
    assert program.exit_code == 0
    assert files(program) == {"/work-dir/index.html": ""}
    assert logs(program) == ["Connecting to info.cern.ch"]


@pytest.mark.parametrize(
    "argv",
    [
        ("wget", "-qO-", "http://example.com/"),
        ("wget", "-q", "https://example.com/file.tgz"),
        ("curl", "-fsSL", "-o", "/tmp/x", "https://example.com/"),
    ],
)
def test_http_fetches_succeed(argv: tuple[str, ...]) -> None:
    assert read_program(argv, {}).exit_code == 0


def test_a_fetch_of_another_scheme_is_unsupported() -> None:
    program = read_program(("wget", "ftp://example.com/x"), {}, is_init=True)
    assert program.exit_code == UNSUPPORTED_EXIT_CODE
    assert UNSUPPORTED in program.message


def test_a_redirected_echo_writes_the_file_and_exits() -> None:
    program = read_program(sh("echo hello > /data/index.html && echo done"), {}, is_init=True)
    assert program.exit_code == 0
    assert files(program) == {"/data/index.html": "hello\n"}
    assert logs(program) == ["done"]


def test_appending_redirections_accumulate() -> None:
    program = read_program(sh("echo a > /f; echo b >> /f; cat /f"), {})
    assert files(program)["/f"] == "a\nb\n"
    assert logs(program) == ["a", "b"]


def test_and_skips_after_a_failure_and_or_runs() -> None:
    program = read_program(sh("false && echo never; false || echo fallback"), {})
    assert logs(program) == ["fallback"]
    assert program.exit_code == 0


def test_the_status_of_the_last_statement_is_the_exit_code() -> None:
    assert read_program(sh("true; false"), {}).exit_code == 1
    assert read_program(sh("exit 3; echo never"), {}).exit_code == 3


def test_set_e_stops_at_the_first_failure() -> None:
    program = read_program(sh("set -e; mkdir -p /a; cat /missing; echo never"), {})
    assert program.exit_code == 1
    assert logs(program) == ["cat: can't open '/missing': No such file or directory"]


def test_sleeps_advance_virtual_time_and_lines_carry_it() -> None:
    program = read_program(sh("echo one; sleep 2; echo two; sleep 3"), {})
    assert (program.exit_code, program.after) == (0, 5.0)
    assert [i.at for i in program.timeline] == [0.0, 2.0]


def test_cat_reads_files_the_container_can_see() -> None:
    program = read_program(sh("cat /etc/config/key"), {}, read_file={"/etc/config/key": "v\n"}.get)
    assert (program.exit_code, logs(program)) == (0, ["v"])


def test_printenv_and_assignments() -> None:
    program = read_program(sh("GREETING=hi; printenv GREETING NAME"), {"NAME": "pod"})
    assert (program.exit_code, logs(program)) == (0, ["hi", "pod"])
    assert read_program(("printenv", "MISSING"), {}).exit_code == 1


def test_printf_formats_its_arguments() -> None:
    assert logs(read_program(sh("printf '%s-%s\\n' a b"), {})) == ["a-b"]


@pytest.mark.parametrize(
    "script",
    ["cat /etc/hosts | grep x", "if true; then echo y; fi", "for i in 1 2; do echo $i; done"],
)
def test_constructs_it_cannot_follow_are_unsupported(script: str) -> None:
    program = read_program(sh(script), {})
    assert program.exit_code == UNSUPPORTED_EXIT_CODE
    assert program.message.startswith(f"{UNSUPPORTED}: ")


def test_an_unknown_program_in_a_script_is_unsupported_and_named() -> None:
    program = read_program(sh("echo start; python3 app.py; echo never"), {})
    assert program.exit_code == UNSUPPORTED_EXIT_CODE
    assert program.message == f"{UNSUPPORTED}: python3 app.py"
    assert logs(program) == ["start", f"sh: python3 app.py: {UNSUPPORTED}"]


def test_an_unknown_bare_command_is_the_images_server_but_not_in_an_init_container() -> None:
    assert read_program(("nginx", "-g", "daemon off;"), {}).exit_code is None
    init = read_program(("/app/migrate", "--up"), {}, is_init=True)
    assert (init.exit_code, init.message) == (
        UNSUPPORTED_EXIT_CODE,
        f"{UNSUPPORTED}: /app/migrate --up",
    )


def test_exec_of_a_server_runs_until_stopped() -> None:
    program = read_program(sh("echo starting; exec nginx -g 'daemon off;'"), {})
    assert program.exit_code is None
    assert logs(program) == ["starting"]


@pytest.mark.parametrize(
    "script",
    [
        "while true; do echo hi; sleep 5; done",
        "echo x; sleep infinity; echo never",
        "touch /tmp/log && tail -f /tmp/log",
        "echo configuring; nginx -g 'daemon off;'",
    ],
)
def test_loops_and_endless_sleeps_run_until_stopped(script: str) -> None:
    assert read_program(sh(script), {}).exit_code is None


def test_unsupported_exits_reach_the_container_status(tmp_path: object) -> None:
    from kubecore.testing import FakeNode

    node = FakeNode(str(tmp_path))
    node.apply(
        """
apiVersion: v1
kind: Pod
metadata: {name: odd}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.35
    command: ["sh", "-c", "seq 3 | tail -1"]
"""
    )
    node.run_until(lambda: node.status("odd").phase == "Failed")
    terminated = node.status("odd").container_statuses[0].state.terminated
    assert terminated is not None
    assert terminated.exit_code == UNSUPPORTED_EXIT_CODE
    assert terminated.message == f"{UNSUPPORTED}: seq 3 | tail -1"


def test_a_container_sees_its_hostname_as_docker_sets_it(tmp_path: object) -> None:
    from kubecore.testing import FakeNode

    node = FakeNode(str(tmp_path))
    node.apply(
        """
apiVersion: v1
kind: Pod
metadata: {name: command-demo}
spec:
  restartPolicy: OnFailure
  containers:
  - name: command-demo-container
    image: debian
    command: ["printenv"]
    args: ["HOSTNAME"]
"""
    )
    node.run_until(lambda: node.status("command-demo").phase == "Succeeded")
    (container,) = node.containers("command-demo")
    assert [line.decode() for line in node.runtime.logs(container.id)] == ["command-demo\n"]


def _lister(tree: dict[str, tuple[str, ...]], files: frozenset[str] = frozenset()) -> DirLister:
    def list_dir(path: str) -> tuple[str, ...] | None:
        if path in files:
            raise NotADirectoryError(path)
        if path in tree:
            return tree[path]
        if path.startswith("/etc/config/"):
            raise FileNotFoundError(path)
        return None

    return list_dir


def test_ls_of_a_mounted_configmap_directory_shows_its_keys() -> None:
    """The docs' ConfigMap volume pod: ``ls /etc/config/`` (the atomic writer's ``..data``
    entries are dot-names, hidden as in a real container)."""
    tree = {"/etc/config": ("..data", "..2026_11_30", "log_level", "game.properties")}
    program = read_program(sh("ls /etc/config/"), {}, list_dir=_lister(tree))
    assert (program.exit_code, logs(program)) == (0, ["game.properties", "log_level"])
    program = read_program(sh("ls -a /etc/config"), {}, list_dir=_lister(tree))
    assert logs(program)[:4] == [".", "..", "..2026_11_30", "..data"]


def test_ls_of_several_paths_missing_ones_and_written_files() -> None:
    tree = {"/etc/config": ("a",), "/data": ()}
    files = frozenset({"/etc/config/a"})
    script = "echo x > /data/new; ls /etc/config/a /data /etc/config /etc/config/nope"
    program = read_program(sh(script), {}, list_dir=_lister(tree, files))
    assert program.exit_code == 1
    assert logs(program) == [
        "ls: /etc/config/nope: No such file or directory",
        "/etc/config/a",
        "",
        "/data:",
        "new",
        "",
        "/etc/config:",
        "a",
    ]


@pytest.mark.parametrize("script", ["ls /", "ls", "ls -l /etc/config", "ls /usr/share"])
def test_ls_of_what_the_reader_cannot_see_is_unsupported(script: str) -> None:
    program = read_program(sh(script), {}, list_dir=_lister({"/etc/config": ("a",)}))
    assert program.exit_code == UNSUPPORTED_EXIT_CODE
    assert UNSUPPORTED in program.message


def test_a_pipeline_into_an_endless_loop_runs_until_stopped() -> None:
    """The docs' adapter sidecar: ``tail -F FILE | while read line; do ...; done``."""
    script = (
        "touch /var/log/app/raw.log; tail -F /var/log/app/raw.log | while read line;"
        ' do echo "adapted: $line"; done'
    )
    program = read_program(sh(script), {})
    assert program.exit_code is None
    assert files(program) == {"/var/log/app/raw.log": ""}


@pytest.mark.parametrize("script", ["cat /f | grep x", "echo a | (cat)", "ls /etc/config | wc -l"])
def test_a_pipeline_that_ends_is_unsupported(script: str) -> None:
    assert read_program(sh(script), {}).exit_code == UNSUPPORTED_EXIT_CODE
