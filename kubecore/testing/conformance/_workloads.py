"""The workloads a runtime's test image runs for the suite, how to make busybox run them, and
the security report one of them prints."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator

import attrs

Command = tuple[str, ...]
"""A command line (argv) a container or an exec runs."""
MiB = 1024 * 1024


def _echo(text: str) -> Command:
    return ("echo", text)


def _sleep(seconds: float) -> Command:
    return ("sleep", f"{seconds:g}")


REPORT_PREFIX = "kcsec "
PORT_RANGE_SYSCTL = "net.ipv4.ip_local_port_range"


@attrs.frozen
class SecurityReport:
    """What a container's process sees of its security context."""

    uid: int
    gid: int
    groups: frozenset[int]
    cap_eff: int
    """The effective capability set, as a bit mask (``CapEff`` in ``/proc/self/status``)."""
    no_new_privs: bool
    seccomp_mode: int
    """0 none, 1 strict, 2 filter (``Seccomp`` in ``/proc/self/status``)."""
    read_only_root: bool
    label: str = ""
    """The process's security label (``/proc/self/attr/current``: AppArmor or SELinux)."""
    port_range: str = ""
    """``net.ipv4.ip_local_port_range``, blanks normalised to one space."""


def parse_security_report(lines: Iterator[bytes] | list[bytes]) -> SecurityReport | None:
    """The report ``report_security`` printed (None until its last line is there)."""
    values: dict[str, str] = {}
    for raw in lines:
        line = raw.decode(errors="replace").rstrip("\n")
        if line.startswith(REPORT_PREFIX) and "=" in line:
            key, _, value = line[len(REPORT_PREFIX) :].partition("=")
            values[key] = value.strip()
    if "end" not in values:
        return None
    return SecurityReport(
        uid=int(values["uid"]),
        gid=int(values["gid"]),
        groups=frozenset(int(g) for g in values.get("groups", "").split()),
        cap_eff=int(values.get("CapEff", "0"), 16),
        no_new_privs=values.get("NoNewPrivs") == "1",
        seccomp_mode=int(values.get("Seccomp", "0")),
        read_only_root=values.get("rootfs") == "ro",
        label=values.get("label", ""),
        port_range=" ".join(values.get("port_range", "").split()),
    )


def _report_security_script() -> str:
    p = REPORT_PREFIX
    return (
        f'echo "{p}uid=$(id -u)"; echo "{p}gid=$(id -g)"; echo "{p}groups=$(id -G)"; '
        'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status'
        f' | while read k v; do echo "{p}${{k%:}}=$v"; done; '
        f'if touch /.kcsec-probe 2>/dev/null; then rm -f /.kcsec-probe; echo "{p}rootfs=rw";'
        f' else echo "{p}rootfs=ro"; fi; '
        f'echo "{p}label=$(cat /proc/self/attr/current 2>/dev/null)"; '
        f'echo "{p}port_range=$(cat /proc/sys/net/ipv4/ip_local_port_range)"; '
        f'echo "{p}end=1"; '
    )


def _print_twice(first: str, second: str, seconds: float) -> Command:
    script = (
        f"echo {shlex.quote(first)}; sleep {seconds:g}; echo {shlex.quote(second)}; "
        "trap 'exit 0' TERM; while true; do sleep 1; done"
    )
    return ("sh", "-c", script)


@attrs.frozen
class Workloads:
    """Commands for the runtime's test image, so the suite knows how to make it behave."""

    image: str
    """The test image. The suite pulls it only if ``image_status`` does not find it."""
    run_forever: Command
    """Runs until stopped, and exits 0 promptly on TERM."""
    print_and_run: Callable[[str], Command]
    """Prints the text (one line) then runs like ``run_forever``."""
    exit_with: Callable[[int], Command]
    """Exits at once with the code (also used as an exec command)."""
    serve_tcp: Callable[[int], Command] | None = None
    """Listens on the TCP port until stopped (exits promptly on TERM); None if unsupported."""
    check_tcp: Callable[[int], Command] | None = None
    """An exec command that exits 0 only if something listens on 127.0.0.1:PORT."""
    consume_memory: Command | None = None
    """Allocates memory until the kernel kills it under ``memory_limit``; None if unsupported."""
    memory_limit: int = 32 * MiB
    print_twice: Callable[[str, str, float], Command] = _print_twice
    """Prints the first text, the second that many seconds later, then runs like
    ``run_forever``."""
    echo: Callable[[str], Command] = _echo
    """An exec command that prints the text."""
    sleep: Callable[[float], Command] = _sleep
    """An exec command that takes that many seconds."""
    list_processes: Command | None = None
    """An exec command that prints the command lines of the processes it sees (``ps``); None
    skips the PID-namespace checks."""
    pullable_image: str | None = None
    """An image the suite may pull, use and remove (nothing else may use it); None skips that."""
    report_security: Command | None = None
    """Prints a ``SecurityReport`` (``parse_security_report`` reads it) then runs like
    ``run_forever``; None when the runtime reads it through ``observe_security`` instead."""
    absent_image: str = "localhost:1/kubecore-conformance/absent:never"
    """A reference whose pull must fail (the default points at a closed loopback port)."""
    sandbox_image: str = ""
    tcp_port: int = 8080
    show_mounts: Command | None = None
    """An exec command printing the container's ``/proc/mounts`` (to see a tmpfs and its size);
    None: the suite checks only that a memory-backed mount is applied or refused."""
    timeout: float = 30.0
    """Upper bound of every wait, in (the clock's) seconds."""
    run_script: Callable[[str], Command] | None = None
    """Runs the POSIX shell script (``cat``, ``echo`` of variables and with ``>``) then runs like
    ``run_forever``: how the suite sees the environment and the mounts a container was given.
    None: those checks are skipped (a failure in strict mode)."""


def busybox_workloads(image: str = "busybox:1.36", **overrides: object) -> Workloads:
    """Workloads for a busybox image (``sh``, ``sleep``, ``httpd``, ``wget``, ``tail``)."""

    def forever(prefix: str = "") -> Command:
        return ("sh", "-c", f"{prefix}trap 'exit 0' TERM; while true; do sleep 1; done")

    def serve(port: int) -> Command:
        return (
            "sh",
            "-c",
            "trap 'exit 0' TERM; mkdir -p /tmp/www; echo ok > /tmp/www/index.html; "
            f"httpd -f -p {port} -h /tmp/www & wait",
        )

    workloads = Workloads(
        image=image,
        run_forever=forever(),
        report_security=forever(_report_security_script()),
        print_and_run=lambda text: forever(f"echo {shlex.quote(text)}; "),
        exit_with=lambda code: ("sh", "-c", f"exit {code}"),
        serve_tcp=serve,
        check_tcp=lambda port: ("wget", "-q", "-O-", f"http://127.0.0.1:{port}/"),
        consume_memory=("sh", "-c", "tail /dev/zero"),
        show_mounts=("cat", "/proc/mounts"),
        list_processes=("ps",),
        run_script=lambda script: forever(f"{script}; "),
    )
    return attrs.evolve(workloads, **overrides)  # type: ignore[arg-type]
