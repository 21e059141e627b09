"""``kubecore kubeconfig DIR``: the files it makes, their modes, and what a second run keeps."""

from __future__ import annotations

import base64
import ipaddress
import os
import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from kubecore._cli.kubeconfig import certificate_names
from tests.cli.support import run_cli

FILES = ("ca.crt", "ca.key", "server.crt", "server.key", "token", "kubeconfig")
SECRETS = ("ca.key", "server.key", "token", "kubeconfig")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _sans(path: Path) -> list[str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(name.value) for name in names]


def test_makes_every_file_with_owner_only_secrets(tmp_path: Path) -> None:
    directory = tmp_path / "new" / "kube"
    code, out, err = run_cli("kubeconfig", str(directory), "--port", "16443")
    assert code == 0, err
    assert sorted(p.name for p in directory.iterdir()) == sorted(FILES)
    for name in SECRETS:
        assert _mode(directory / name) == 0o600, name
    assert _mode(directory) == 0o700
    assert f"export KUBECONFIG={directory / 'kubeconfig'}" in out
    assert f"--tls-cert-file {directory / 'server.crt'}" in out
    assert f"--tls-private-key-file {directory / 'server.key'}" in out
    assert f"--api-token-file {directory / 'token'}" in out
    assert "--port 16443" in out

    config = yaml.safe_load((directory / "kubeconfig").read_text())
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:16443"
    ca = base64.b64decode(cluster["certificate-authority-data"])
    assert ca == (directory / "ca.crt").read_bytes()
    assert config["users"][0]["user"]["token"] == (directory / "token").read_text().strip()
    assert config["current-context"] == config["contexts"][0]["name"]

    sans = _sans(directory / "server.crt")
    assert {"127.0.0.1", "::1", "localhost"} <= set(sans)
    served = x509.load_pem_x509_certificate((directory / "server.crt").read_bytes())
    served.verify_directly_issued_by(x509.load_pem_x509_certificate(ca))


def test_a_second_run_keeps_the_ca_and_token_and_says_so(tmp_path: Path) -> None:
    assert run_cli("kubeconfig", str(tmp_path))[0] == 0
    before = {name: (tmp_path / name).read_bytes() for name in FILES}
    code, out, _ = run_cli("kubeconfig", str(tmp_path))
    assert code == 0
    assert {name: (tmp_path / name).read_bytes() for name in FILES} == before
    assert "ca.crt: kept" in out and "token" in out and "unchanged" in out


def test_a_new_name_reissues_the_serving_certificate_under_the_same_ca(tmp_path: Path) -> None:
    assert run_cli("kubeconfig", str(tmp_path))[0] == 0
    ca, token = (tmp_path / "ca.crt").read_bytes(), (tmp_path / "token").read_bytes()
    code, out, _ = run_cli(
        "kubeconfig", str(tmp_path), "--address", "10.9.8.7", "--san", "node.example"
    )
    assert code == 0
    assert "issued again (it does not name 10.9.8.7, node.example)" in out
    assert (tmp_path / "ca.crt").read_bytes() == ca
    assert (tmp_path / "token").read_bytes() == token
    assert {"10.9.8.7", "node.example", "127.0.0.1"} <= set(_sans(tmp_path / "server.crt"))
    server = yaml.safe_load((tmp_path / "kubeconfig").read_text())["clusters"][0]["cluster"]
    assert server["server"] == "https://10.9.8.7:10250"
    previous = yaml.safe_load((tmp_path / "kubeconfig.previous").read_text())
    assert previous["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:10250"
    assert _mode(tmp_path / "kubeconfig.previous") == 0o600
    assert "the one before is" in out


def test_a_broken_ca_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("not a certificate\n")
    code, _, err = run_cli("kubeconfig", str(tmp_path))
    assert code == 2
    assert "ca.crt: it cannot be read" in err and "does not replace it" in err
    assert (tmp_path / "ca.crt").read_text() == "not a certificate\n"
    assert not (tmp_path / "server.crt").exists()


def test_a_ca_without_its_key_keeps_a_fitting_serving_certificate(tmp_path: Path) -> None:
    assert run_cli("kubeconfig", str(tmp_path))[0] == 0
    (tmp_path / "ca.key").unlink()  # kept offline, say
    assert run_cli("kubeconfig", str(tmp_path))[0] == 0
    code, _, err = run_cli("kubeconfig", str(tmp_path), "--san", "other.example")
    assert code == 2
    assert "must be issued again (it does not name other.example)" in err
    assert "ca.key is missing" in err


def test_a_token_others_could_read_is_not_kept(tmp_path: Path) -> None:
    assert run_cli("kubeconfig", str(tmp_path))[0] == 0
    before = (tmp_path / "token").read_bytes()
    (tmp_path / "token").chmod(0o644)
    code, out, _ = run_cli("kubeconfig", str(tmp_path))
    assert code == 0 and "token: readable by group or others, not kept" in out
    assert _mode(tmp_path / "token") == 0o600
    assert (tmp_path / "token").read_bytes() != before
    token = yaml.safe_load((tmp_path / "kubeconfig").read_text())["users"][0]["user"]["token"]
    assert token == (tmp_path / "token").read_text().strip()


def test_a_ca_key_others_could_read_is_refused(tmp_path: Path) -> None:
    assert run_cli("kubeconfig", str(tmp_path))[0] == 0
    (tmp_path / "ca.key").chmod(0o640)
    code, _, err = run_cli("kubeconfig", str(tmp_path))
    assert code == 2 and f"{tmp_path / 'ca.key'}: readable by group or others" in err


def test_a_directory_that_cannot_be_written_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run_cli("kubeconfig", str(blocker / "kube"))
    assert code == 2
    assert str(blocker / "kube") in err
    code, _, err = run_cli("kubeconfig", str(blocker))
    assert code == 2 and "is not a directory" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--san", "bad name"], "'bad name' is neither an IP address nor a host name"),
        (["--server", "http://127.0.0.1:1"], "--server: an https:// URL"),
        (["--server", "https://bad_host:1"], "'bad_host' is neither"),
        (["--san", "trailing-.example"], "'trailing-.example' is neither"),
        (["--port", "0"], "a port is 1 to 65535"),
    ],
)
def test_bad_flags_name_the_problem(tmp_path: Path, flags: list[str], message: str) -> None:
    code, _, err = run_cli("kubeconfig", str(tmp_path / "d"), *flags)
    assert code == 2 and message in err
    assert not (tmp_path / "d").exists()


def test_a_host_name_that_is_no_dns_name_is_left_out() -> None:
    names = certificate_names("127.0.0.1", "https://127.0.0.1:1", [], "my_host")
    assert names == ("127.0.0.1", "::1", "localhost")
    assert "node-1" in certificate_names("0.0.0.0", "https://127.0.0.1:1", [], "Node-1")


def test_an_ipv6_address_is_bracketed_in_the_url(tmp_path: Path) -> None:
    assert run_cli("kubeconfig", str(tmp_path), "--address", "::1", "--port", "7443")[0] == 0
    cluster = yaml.safe_load((tmp_path / "kubeconfig").read_text())["clusters"][0]["cluster"]
    assert cluster["server"] == "https://[::1]:7443"
    assert ipaddress.ip_address("::1").compressed in _sans(tmp_path / "server.crt")


# --- a directory or a file someone else made ------------------------------------------------

NOBODY = 65534


def _as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("building another user's files needs root (chown)")


def test_a_directory_another_user_made_is_refused(tmp_path: Path) -> None:
    _as_root()
    directory = tmp_path / "kube"
    directory.mkdir(mode=0o777)
    directory.chmod(0o777)
    os.chown(directory, NOBODY, NOBODY)
    (directory / "token").write_text("known-to-nobody\n")
    os.chown(directory / "token", NOBODY, NOBODY)
    code, out, err = run_cli("kubeconfig", str(directory))
    assert code == 2, out
    assert f"{directory}: owned by uid {NOBODY}, not by you (uid 0)" in err
    assert sorted(p.name for p in directory.iterdir()) == ["token"]  # nothing written there


def test_a_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "kube"
    directory.mkdir()
    directory.chmod(0o777)
    code, _, err = run_cli("kubeconfig", str(directory))
    assert code == 2 and f"{directory}: writable by group or others (mode 0777)" in err
    inner = directory / "inner"
    inner.mkdir(mode=0o700)
    code, _, err = run_cli("kubeconfig", str(inner))
    assert code == 2 and f"{directory}, above {inner}: writable by group or others" in err


@pytest.mark.timeout(60)  # reading a FIFO blocked for ever
@pytest.mark.parametrize("planted", ["other-owner", "hard-link", "symlink", "fifo"])
def test_a_file_kubecore_did_not_write_is_never_kept(tmp_path: Path, planted: str) -> None:
    directory = tmp_path / "kube"
    assert run_cli("kubeconfig", str(directory))[0] == 0
    token = directory / "token"
    token.unlink()
    outside = tmp_path / "outside"
    outside.write_text("planted\n")
    outside.chmod(0o600)
    if planted == "other-owner":
        _as_root()
        token.write_text("planted\n")
        token.chmod(0o600)
        os.chown(token, NOBODY, NOBODY)
        why = f"owned by uid {NOBODY}"
    elif planted == "hard-link":
        os.link(outside, token)
        why = "it has 2 hard links"
    elif planted == "symlink":
        token.symlink_to(outside)
        why = "a symbolic link"
    else:
        os.mkfifo(token, 0o600)
        why = "not a regular file (a FIFO)"
    code, _, err = run_cli("kubeconfig", str(directory))
    assert code == 2
    assert f"{token}: {why}" in err and "keeps only the files it wrote" in err


def test_a_new_directory_is_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        assert run_cli("kubeconfig", str(tmp_path / "kube"))[0] == 0
    finally:
        os.umask(previous)
    assert _mode(tmp_path / "kube") == 0o700
    assert _mode(tmp_path / "kube" / "token") == 0o600
