"""Certificates for the TLS tests, made with ``cryptography``: a CA, the
certificates it issues (a broker's with SAN 127.0.0.1 and localhost, a
client's), written as PEM files, PKCS12 stores or inline PEM text.

``Pki(tmp_path)`` is one test's world: ``ca`` signs, ``other_ca`` is a second
CA nobody trusts, ``issue(...)`` makes a key and a certificate. Keys are EC
P-256 (fast to make); the RSA path is exercised by ``rsa=True``.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Issued:
    key: object
    cert: x509.Certificate
    chain: tuple[x509.Certificate, ...]  # leaf first, then the CA

    def key_pem(self, password: str | None = None) -> bytes:
        enc = (serialization.BestAvailableEncryption(password.encode()) if password
               else serialization.NoEncryption())
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)

    def chain_pem(self) -> bytes:
        return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in self.chain)

    def write_pem(self, path: Path, password: str | None = None) -> Path:
        """Key and chain in one PEM file (Kafka's PEM keystore file)."""
        path.write_bytes(self.key_pem(password) + self.chain_pem())
        return path

    def write_pkcs12(self, path: Path, password: str | None) -> Path:
        enc = (serialization.BestAvailableEncryption(password.encode()) if password
               else serialization.NoEncryption())
        path.write_bytes(pkcs12.serialize_key_and_certificates(b"kavka", self.key, self.cert,
                                                               list(self.chain[1:]), enc))
        return path


def _name(cn: str, extra: list[x509.NameAttribute] | None = None) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "CZ"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Kavka Tests"),
                      *(extra or []),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class Ca:
    def __init__(self, cn: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = _name(cn)
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))

    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, cn: str, *, hosts: tuple[str, ...] = (), name: x509.Name | None = None,
              rsa_key: bool = False) -> Issued:
        key = rsa.generate_private_key(65537, 2048) if rsa_key else ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (x509.CertificateBuilder().subject_name(name or _name(cn)).issuer_name(self.name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                         ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if hosts:
            sans: list[x509.GeneralName] = []
            for h in hosts:
                try:
                    sans.append(x509.IPAddress(ipaddress.ip_address(h)))
                except ValueError:
                    sans.append(x509.DNSName(h))
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return Issued(key, cert, (cert, self.cert))


class Pki:
    """One test's certificates, files under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca = Ca("Kavka Test CA")
        self.other_ca = Ca("Somebody Else's CA")
        self.broker = self.ca.issue("broker", hosts=("127.0.0.1", "localhost"))
        self.client = self.ca.issue("alice")

    def ca_file(self) -> Path:
        p = self.dir / "ca.pem"
        p.write_bytes(self.ca.pem())
        return p

    def truststore_p12(self, password: str = "trust-pass") -> Path:
        p = self.dir / "truststore.p12"
        p.write_bytes(pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(self.ca.cert, b"ca")],
            serialization.BestAvailableEncryption(password.encode())))
        return p
