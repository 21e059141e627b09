"""``kubecore kubeconfig DIR``: everything kubectl needs to talk to the node, in one step.

It writes into DIR a private CA (``ca.crt``, ``ca.key``), a serving certificate it signs for
the node's names and addresses (``server.crt``, ``server.key``), a random API token (``token``)
and a kubeconfig (``kubeconfig``: the cluster with the CA, a user with the token, a context,
current-context), and prints the ``kubecore run`` flags that serve with them and the
``export KUBECONFIG=...`` line. Run again, it keeps what is there and still fits: it never
replaces a CA that clients may already trust, and says what it kept and what it made.

It trusts nobody else's files: DIR must be the caller's and writable by nobody else (nor may
anyone else replace a directory above it), and a file in it is kept only when kubecore can tell
it wrote it (a regular file of the caller's, one link, a key or token readable by nobody else);
anything else is refused, naming the path and what is wrong."""

from __future__ import annotations

import argparse
import base64
import errno
import ipaddress
import os
import secrets
import shlex
import socket
import stat
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import attrs
import yaml

from kubecore._cli.basic import KUBECONFIG_HELP, UsageError
from kubecore._http.serving import DEFAULT_ADDRESS, DEFAULT_PORT
from kubecore._plugins.commands import EXIT_OK
from kubecore._util.files import read_own_file, replace_file

CA_CERT, CA_KEY = "ca.crt", "ca.key"
SERVING_CERT, SERVING_KEY = "server.crt", "server.key"
TOKEN, KUBECONFIG = "token", "kubeconfig"
SECRET_MODE = 0o600
DIR_MODE = 0o700
LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")
_ANY = ("0.0.0.0", "::")


def add_kubeconfig_command(commands: Any) -> None:
    """The ``kubeconfig`` subcommand's parser."""
    command = commands.add_parser(
        "kubeconfig",
        help=KUBECONFIG_HELP,
        description=(
            "Write into DIR a private CA, a serving certificate it signs (for 127.0.0.1, ::1, "
            "localhost, this host's name and --address/--san), a random API token and a "
            "kubeconfig with them; print the `kubecore run` flags that serve with them and "
            "the `export KUBECONFIG=...` line. Run again, it keeps what is there (it never "
            "replaces a CA clients may trust) and makes only what is missing or no longer fits."
        ),
    )
    command.add_argument("directory", metavar="DIR", help="where the files go (made if missing)")
    command.add_argument(
        "--address",
        metavar="IP",
        default=DEFAULT_ADDRESS,
        help=f"the address `kubecore run --address` binds (default: {DEFAULT_ADDRESS})",
    )
    command.add_argument(
        "--port",
        metavar="PORT",
        type=_port,
        default=DEFAULT_PORT,
        help=f"the API port (default: {DEFAULT_PORT})",
    )
    command.add_argument(
        "--san",
        metavar="NAME",
        action="append",
        default=[],
        help="one more host name or IP address the certificate names (repeatable)",
    )
    command.add_argument(
        "--server",
        metavar="URL",
        default="",
        help="the URL kubectl uses (default: https://ADDRESS:PORT, 127.0.0.1 for 0.0.0.0)",
    )
    command.add_argument(
        "--name",
        metavar="NAME",
        default="kubecore",
        help="the kubeconfig's cluster and context name (default: kubecore)",
    )
    command.set_defaults(handler=cmd_kubeconfig)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, not {port}")
    return port


@attrs.frozen
class Plan:
    """What the command was asked for: where, which URL, which names the certificate covers."""

    directory: Path
    address: str
    port: int
    server: str
    names: tuple[str, ...]
    name: str


def server_url(address: str, port: int) -> str:
    host = "127.0.0.1" if address in _ANY else address
    if ":" in host:
        host = f"[{host}]"
    return f"https://{host}:{port}"


def certificate_names(
    address: str, server: str, extra: Iterable[str], host: str
) -> tuple[str, ...]:
    """The loopback names, the host's name, the bound address and the server URL's host, and
    ``extra``; each once, in that order."""
    candidates = [*LOOPBACK_NAMES]
    if is_host_name(host.lower()):
        candidates.append(host.lower())
    if address not in _ANY:
        candidates.append(address)
    candidates.append(urllib.parse.urlsplit(server).hostname or "")
    candidates.extend(extra)
    names: list[str] = []
    for name in candidates:
        if name and name not in names:
            names.append(name)
    return tuple(names)


def plan_of(args: argparse.Namespace, host: str) -> Plan:
    for name in [args.address, *args.san]:
        _check_name(name)
    server = args.server or server_url(args.address, args.port)
    parts = urllib.parse.urlsplit(server)
    if parts.scheme != "https" or not parts.hostname:
        raise UsageError(f"--server: an https:// URL with a host, not {server!r}")
    _check_name(parts.hostname)
    names = certificate_names(args.address, server, args.san, host)
    return Plan(Path(args.directory).absolute(), args.address, args.port, server, names, args.name)


def is_host_name(name: str) -> bool:
    """A DNS name of letters, digits and hyphens (what a certificate may name)."""
    labels = name.split(".")
    return bool(name) and len(name) <= 253 and all(_is_label(label) for label in labels)


def _check_name(name: str) -> None:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        if not is_host_name(name):
            raise UsageError(f"{name!r} is neither an IP address nor a host name") from None


def _is_label(label: str) -> bool:
    stripped = label.replace("-", "")
    return (
        0 < len(label) <= 63
        and stripped.isalnum()
        and stripped.isascii()
        and "-" not in (label[0], label[-1])
    )


# --- files -------------------------------------------------------------------------------


def prepare_directory(directory: Path) -> None:
    """DIR made (0700) if missing; a ``UsageError`` naming it when it is not a writable one, or
    one another user could change (``check_directory``)."""
    try:
        directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise UsageError(f"{directory} is not a directory") from None
    except OSError as error:
        raise UsageError(f"cannot make {directory}: {error.strerror or error}") from None
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory")
    check_directory(directory)
    probe = directory / f".kubecore-probe-{os.getpid()}"
    try:
        replace_file(probe, b"")
        probe.unlink()
    except OSError as error:
        raise UsageError(f"cannot write in {directory}: {error.strerror or error}") from None


def check_directory(directory: Path) -> None:
    """Refuse (``UsageError``) DIR unless it is the caller's and only the caller may change it,
    and each directory above it is root's or the caller's and writable by nobody else (unless
    sticky, as ``/tmp``): whoever can rename in a directory can swap the keys in it."""
    uid = os.geteuid()
    info = os.stat(directory)
    problem = _not_owned(info, uid) or _writable_by_others(info)
    if problem:
        raise UsageError(
            f"{directory}: {problem}: it cannot hold keys others may change"
            f" (use a directory of yours with mode 0700)"
        )
    for parent in directory.parents:
        info = os.stat(parent)
        problem = "" if info.st_uid in (0, uid) else _not_owned(info, uid)
        if not problem and not info.st_mode & stat.S_ISVTX:
            problem = _writable_by_others(info)
        if problem:
            raise UsageError(f"{parent}, above {directory}: {problem}: others may replace it")


def _not_owned(info: os.stat_result, uid: int) -> str:
    return "" if info.st_uid == uid else f"owned by uid {info.st_uid}, not by you (uid {uid})"


def _writable_by_others(info: os.stat_result) -> str:
    mode = stat.S_IMODE(info.st_mode)
    return f"writable by group or others (mode {mode:04o})" if mode & 0o022 else ""


def write_secret(path: Path, data: bytes) -> None:
    """``data`` into ``path`` atomically, readable by its owner only (0600) from the start."""
    replace_file(path, data, SECRET_MODE)


def write_public(path: Path, data: bytes) -> None:
    replace_file(path, data, 0o644)


@attrs.frozen
class Found:
    """A file of DIR that kubecore wrote: its bytes, and whether only its owner can read it."""

    data: bytes
    private: bool


def _read(path: Path) -> Found | None:
    """The file at ``path`` as kubecore wrote it (None when there is none). Refused
    (``UsageError`` naming it) when it may be someone else's: not a regular file, a symbolic
    link, not the caller's, writable by others, or with another hard link."""
    try:
        data, info = read_own_file(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        why = "a symbolic link" if error.errno == errno.ELOOP else (error.strerror or str(error))
        raise UsageError(f"{path}: {why}{_NOT_KEPT}") from None
    problem = _not_owned(info, os.geteuid()) or _writable_by_others(info)
    if not problem and info.st_nlink != 1:
        problem = f"it has {info.st_nlink} hard links"
    if problem:
        raise UsageError(f"{path}: {problem}{_NOT_KEPT}")
    return Found(data, not info.st_mode & 0o077)


_NOT_KEPT = "; kubecore keeps only the files it wrote: remove it to have a new one made"


def _secret(path: Path, say: list[str]) -> bytes | None:
    """The key or token at ``path`` when it is kubecore's and was never readable by others
    (None otherwise: one others could read is not kept)."""
    found = _read(path)
    if found is not None and not found.private:
        say.append(f"{path}: readable by group or others, not kept")
        return None
    return found.data if found is not None else None


def _data(path: Path) -> bytes | None:
    found = _read(path)
    return found.data if found is not None else None


# --- the steps ---------------------------------------------------------------------------


def ensure_ca(plan: Plan, say: list[str]) -> tuple[bytes, bytes | None]:
    """The CA's certificate and key (None when only the certificate is kept)."""
    from kubecore._cli.certs import ca_problem, make_ca

    cert_path, key_path = plan.directory / CA_CERT, plan.directory / CA_KEY
    cert, found_key = _data(cert_path), _read(key_path)
    if found_key is not None and not found_key.private:
        raise UsageError(
            f"{key_path}: readable by group or others: the CA's key may be known. Clients may "
            f"trust this CA, so kubecore does not replace it: remove {CA_CERT} and {CA_KEY} "
            f"from {plan.directory} to make a new one"
        )
    key = found_key.data if found_key is not None else None
    if cert is None:
        # no ca.crt: nobody can trust this CA yet (a lone ca.key is a half-made one)
        made = make_ca(f"kubecore {plan.name} CA")
        write_secret(key_path, made.key_pem)
        write_public(cert_path, made.cert_pem)
        say.append(f"CA {cert_path}: created")
        return made.cert_pem, made.key_pem
    problem = ca_problem(cert, key)
    if problem:
        raise UsageError(
            f"{cert_path}: {problem}. Clients may trust this CA, so kubecore does not replace "
            f"it: remove {CA_CERT} and {CA_KEY} from {plan.directory} to make a new one"
        )
    say.append(f"CA {cert_path}: kept (clients that trust it keep working)")
    return cert, key


def ensure_serving(plan: Plan, ca_cert: bytes, ca_key: bytes | None, say: list[str]) -> None:
    from kubecore._cli.certs import Issued, issue_serving, serving_problem

    cert_path, key_path = plan.directory / SERVING_CERT, plan.directory / SERVING_KEY
    cert, key = _data(cert_path), _secret(key_path, say)
    why = "missing"
    if cert is not None and key is not None:
        why = serving_problem(Issued(cert, key), ca_cert, plan.names)
        if not why:
            say.append(f"serving certificate {cert_path}: kept")
            return
    if ca_key is None:
        raise UsageError(
            f"{cert_path} must be issued again ({why}) but the CA's key "
            f"{plan.directory / CA_KEY} is missing"
        )
    made = issue_serving(Issued(ca_cert, ca_key), plan.names)
    write_secret(key_path, made.key_pem)
    write_public(cert_path, made.cert_pem)
    verb = "created" if why == "missing" else f"issued again ({why})"
    say.append(f"serving certificate {cert_path}: {verb}, for {', '.join(plan.names)}")


def ensure_token(plan: Plan, say: list[str]) -> str:
    path = plan.directory / TOKEN
    found = _secret(path, say)
    token = found.decode("utf-8", "replace").strip() if found is not None else ""
    if token:
        say.append(f"token {path}: kept")
        return token
    token = secrets.token_urlsafe(32)
    write_secret(path, token.encode() + b"\n")
    say.append(f"token {path}: created")
    return token


def kubeconfig_text(plan: Plan, ca_cert: bytes, token: str) -> str:
    """The kubeconfig: the CA and the token inline, so that the file works on its own."""
    user = f"{plan.name}-admin"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": plan.name,
                "cluster": {
                    "server": plan.server,
                    "certificate-authority-data": base64.b64encode(ca_cert).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": plan.name, "context": {"cluster": plan.name, "user": user}}],
        "current-context": plan.name,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def ensure_kubeconfig(plan: Plan, ca_cert: bytes, token: str, say: list[str]) -> Path:
    path = plan.directory / KUBECONFIG
    text = kubeconfig_text(plan, ca_cert, token).encode()
    found = _secret(path, say)
    if found == text:
        say.append(f"kubeconfig {path}: unchanged")
    elif found is not None:
        # edited by hand, or for another address: kept beside the new one, never lost
        previous = path.with_name(KUBECONFIG + ".previous")
        write_secret(previous, found)
        write_secret(path, text)
        say.append(f"kubeconfig {path}: rewritten (the one before is {previous})")
    else:
        write_secret(path, text)
        say.append(f"kubeconfig {path}: written")
    return path


def run_flags(plan: Plan) -> list[str]:
    """The ``kubecore run`` flags that serve the API with these files."""
    return [
        "--address",
        plan.address,
        "--port",
        str(plan.port),
        "--tls-cert-file",
        str(plan.directory / SERVING_CERT),
        "--tls-private-key-file",
        str(plan.directory / SERVING_KEY),
        "--api-token-file",
        str(plan.directory / TOKEN),
    ]


def cmd_kubeconfig(args: argparse.Namespace, out: IO[str]) -> int:
    from kubecore._cli.certs import MissingCryptography

    plan = plan_of(args, socket.gethostname())
    prepare_directory(plan.directory)
    say: list[str] = []
    try:
        ca_cert, ca_key = ensure_ca(plan, say)
        ensure_serving(plan, ca_cert, ca_key, say)
    except MissingCryptography as error:
        raise UsageError(str(error)) from None
    token = ensure_token(plan, say)
    config = ensure_kubeconfig(plan, ca_cert, token, say)
    for line in say:
        out.write(f"kubecore: {line}\n")
    flags = " ".join(shlex.quote(flag) for flag in run_flags(plan))
    out.write(
        f"\nServe the API with these files:\n  kubecore run {flags} [MANIFEST...]\n"
        f"\nThen point kubectl at the node:\n  export KUBECONFIG={shlex.quote(str(config))}\n"
    )
    return EXIT_OK
