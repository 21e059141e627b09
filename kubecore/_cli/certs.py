"""A private certificate authority for the node's API: a self-signed CA, a serving certificate it
signs for the node's names and addresses, and the checks that decide whether what is on disk
can be kept. Made with the ``cryptography`` package (``pip install kubecore[tls]``); keys are
ECDSA P-256, which every kubectl (Go's crypto/tls) accepts."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

CA_DAYS = 3650
SERVING_DAYS = 365
RENEW_BEFORE = datetime.timedelta(days=30)
"""A serving certificate that expires sooner than this is issued again."""


class MissingCryptography(Exception):
    """The ``cryptography`` package is not installed."""


def _crypto() -> None:
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise MissingCryptography(
            "making certificates needs the cryptography package: pip install 'kubecore[tls]'"
        ) from None


@attrs.frozen
class Issued:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca(common_name: str, days: int = CA_DAYS) -> Issued:
    """A new self-signed CA that may sign serving certificates (and nothing under them)."""
    _crypto()
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    key = _new_key()
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Issued(_cert_pem(cert), _key_pem(key))


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not cert_sign,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def subject_names(names: Iterable[str]) -> list[x509.GeneralName]:
    """Each name as an IP address SAN when it is one, else a DNS name SAN (duplicates dropped)."""
    from cryptography import x509

    found: list[x509.GeneralName] = []
    for name in names:
        try:
            entry: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(name))
        except ValueError:
            entry = x509.DNSName(name)
        if entry not in found:
            found.append(entry)
    return found


def issue_serving(ca: Issued, names: Iterable[str], days: int = SERVING_DAYS) -> Issued:
    """A serving certificate for ``names`` (IP addresses and host names), signed by ``ca``."""
    _crypto()
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    sans = subject_names(names)
    if not sans:
        raise ValueError("a serving certificate needs at least one name or address")
    key = _new_key()
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(str(sans[0].value)))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    return Issued(_cert_pem(cert), _key_pem(key))


def serving_problem(served: Issued, ca_cert_pem: bytes, names: Iterable[str]) -> str:
    """Why this serving certificate and key cannot be kept ('' when they can): unreadable, the
    key not the certificate's, not signed by the CA, expiring within ``RENEW_BEFORE``, or
    missing one of ``names``."""
    _crypto()
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(served.cert_pem)
        ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
        key = serialization.load_pem_private_key(served.key_pem, password=None)
    except (ValueError, TypeError) as error:
        return f"it cannot be read ({error})"
    if not _same_key(key.public_key(), cert.public_key()):
        return "its key does not match it"
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        return "it is not signed by the CA"
    if cert.not_valid_after_utc - _now() < RENEW_BEFORE:
        return f"it expires on {cert.not_valid_after_utc:%Y-%m-%d}"
    try:
        have = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "it names no host"
    missing = [str(n.value) for n in subject_names(names) if n not in have]
    return f"it does not name {', '.join(missing)}" if missing else ""


def ca_problem(cert_pem: bytes, key_pem: bytes | None) -> str:
    """Why this CA certificate (and key, if there is one) is unusable ('' when it is fine)."""
    _crypto()
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as error:
        return f"it cannot be read ({error})"
    if cert.not_valid_after_utc <= _now():
        return f"it expired on {cert.not_valid_after_utc:%Y-%m-%d}"
    if key_pem is None:
        return ""
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as error:
        return f"its key cannot be read ({error})"
    return "" if _same_key(key.public_key(), cert.public_key()) else "its key does not match it"


def _same_key(one: object, other: object) -> bool:
    from cryptography.hazmat.primitives import serialization

    encoding, form = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    return bool(one.public_bytes(encoding, form) == other.public_bytes(encoding, form))  # type: ignore[attr-defined]
