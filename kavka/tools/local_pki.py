"""Certificates for a local secured cluster (``kavka up --secure``): a CA,
one certificate per broker and one client certificate, made with
``cryptography`` and written as PEM files.

Files (in the directory given, which is made private, 0700):

- ``ca.pem``: the CA's certificate, what clients trust (librdkafka's
  ``ssl.ca.location``, Java's ``ssl.truststore.type=PEM`` +
  ``ssl.truststore.location``).
- ``broker-<id>.pem``: the broker's private key and its certificate chain
  (leaf, CA) in one file: Kafka's PEM keystore (``ssl.keystore.type=PEM``,
  ``ssl.keystore.location``). Subject ``CN=broker-<id>``, SAN 127.0.0.1 and
  localhost, so endpoint identification (``https``) passes on loopback.
- ``client.pem`` + ``client-key.pem``: a client certificate (``CN=<user>``)
  and its key, for mutual TLS (librdkafka's ``ssl.certificate.location``
  and ``ssl.key.location``).

Private keys are written 0600 from the start (created with that mode, never
widened); the CA's own key is not kept: nothing signs later, and a CA key on
disk would let anyone who reads it mint certificates this cluster trusts.
Keys are ECDSA P-256 (fast to make, taken by OpenSSL, librdkafka and Java).

Synchronous; called once before the brokers start.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
HOSTS = ("127.0.0.1", "localhost")


@dataclass(frozen=True, slots=True)
class LocalPki:
    """The files of one local cluster's certificates (see the module docstring)."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    def broker_keystore(self, broker_id: int) -> Path:
        return self.directory / f"broker-{broker_id}.pem"

    @property
    def client_certificate(self) -> Path:
        return self.directory / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.directory / "client-key.pem"

    def complete(self, broker_ids: Iterable[int]) -> bool:
        """Every file is there (a data dir reused by a second ``up --secure``)."""
        paths = [self.ca, self.client_certificate, self.client_key, *map(self.broker_keystore, broker_ids)]
        return all(p.is_file() for p in paths)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Kavka local cluster"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``mode`` (a key is never readable by others, not
    even for an instant), replacing any older file."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def create_local_pki(directory: Path, broker_ids: Iterable[int], client_name: str) -> LocalPki:
    """Make the CA, the brokers' and the client's certificates in
    ``directory`` (see the module docstring) and return where they are."""
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + VALIDITY
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("Kavka local CA")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))

    def issue(common_name: str, usages: list[x509.ObjectIdentifier], hosts: tuple[str, ...]) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca_name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False,
                                                content_commitment=False, key_encipherment=False,
                                                data_encipherment=False, key_agreement=True, encipher_only=False,
                                                decipher_only=False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                                  critical=False))
        if hosts:
            names: list[x509.GeneralName] = []
            for h in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(h)))
                except ValueError:
                    names.append(x509.DNSName(h))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return _key_pem(key), _cert_pem(cert) + _cert_pem(ca)

    pki = LocalPki(directory)
    _write(pki.ca, _cert_pem(ca), 0o644)
    for broker_id in broker_ids:
        # brokers are servers to clients and clients of each other
        key, chain = issue(f"broker-{broker_id}", [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
                           HOSTS)
        _write(pki.broker_keystore(broker_id), key + chain, 0o600)
    key, chain = issue(client_name, [ExtendedKeyUsageOID.CLIENT_AUTH], ())
    _write(pki.client_key, key, 0o600)
    _write(pki.client_certificate, chain, 0o644)
    return pki
