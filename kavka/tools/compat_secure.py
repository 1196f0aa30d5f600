"""The secured scenario of the librdkafka suite driver (``python -m
kavka.tools.compat``): what the suite's SSL and SASL tests need, in the shape
trivup (the suite's own cluster launcher) gives it.

- The cluster: ``kavka up --secure``'s (``kavka.tools.secure_cluster``): a
  ``SASL_SSL`` listener (SCRAM-SHA-512 and SCRAM-SHA-256) and an ``SSL``
  listener requiring a client certificate on each broker, the CA and the
  users' SCRAM credentials made under the cluster's data directory; plus the
  suite's scenario keys and ``connections.max.reauth.ms`` (KIP-368), which
  0142 reads from the brokers (DescribeConfigs) and must be non-zero for it
  to run.
- The client files trivup makes and the suite reads from ``SSL_*``
  environment variables (0097): the client certificate and key as PEM and
  DER, a PKCS#12 keystore holding the key, the certificate and the CA, the
  CA as DER and PEM, and the password of the keystore and of the PEM key
  (``SSL_password``, also ``ssl.key.password`` in ``test.conf``). They are
  derived from the local CA's client certificate (``CN=client``), so the
  brokers trust it.
- ``test.conf``: the ``SASL_SSL`` bootstrap, ``sasl.mechanism``,
  ``sasl.username``/``sasl.password`` (the ``admin`` super user: the tests
  describe broker configs and create topics), and the client's
  ``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``
  and ``ssl.key.password``, as trivup writes them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12

from kavka.tools.local_pki import LocalPki
from kavka.tools.secure_cluster import ADMIN_USER, MECHANISM, SecureSetup

# KIP-368 session lifetime given to the secured cluster: 0142 produces and
# consumes for 1.2 lifetimes per sub-test, so a short one keeps it quick
# while still forcing several re-authentications per sub-test.
REAUTH_MS = 6000
# The password of the client keystore and PEM key (trivup's SSL_password):
# a test fixture protecting a throwaway key, not a secret.
KEYSTORE_PASSWORD = "kavka-compat-keystore"


@dataclass(frozen=True, slots=True)
class ClientFiles:
    """trivup's client certificate files (see the module docstring)."""

    directory: Path

    @property
    def pkcs12(self) -> Path:
        return self.directory / "client.keystore.p12"

    @property
    def cert_pem(self) -> Path:
        return self.directory / "client.pem"

    @property
    def cert_der(self) -> Path:
        return self.directory / "client.der"

    @property
    def key_pem(self) -> Path:
        return self.directory / "client-key.pem"  # encrypted with KEYSTORE_PASSWORD

    @property
    def key_der(self) -> Path:
        return self.directory / "client-key.der"

    @property
    def ca_pem(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def ca_der(self) -> Path:
        return self.directory / "ca.der"


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_client_files(pki: LocalPki, directory: Path, password: str = KEYSTORE_PASSWORD) -> ClientFiles:
    """The client's certificate, key and CA of ``pki`` in the encodings
    trivup provides (see the module docstring), into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    files = ClientFiles(directory)
    chain = x509.load_pem_x509_certificates(pki.client_certificate.read_bytes())
    cert = chain[0]
    [ca] = x509.load_pem_x509_certificates(pki.ca.read_bytes())
    key = serialization.load_pem_private_key(pki.client_key.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):  # what local_pki and trivup make
        raise TypeError(f"{pki.client_key}: expected an EC or RSA private key, got a {type(key).__name__}")
    encrypted = serialization.BestAvailableEncryption(password.encode())
    _write(files.pkcs12, pkcs12.serialize_key_and_certificates(b"client", key, cert, [ca], encrypted))
    _write(files.cert_pem, cert.public_bytes(serialization.Encoding.PEM))
    _write(files.cert_der, cert.public_bytes(serialization.Encoding.DER))
    _write(files.key_pem, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            encrypted))
    _write(files.key_der, key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    _write(files.ca_pem, ca.public_bytes(serialization.Encoding.PEM))
    _write(files.ca_der, ca.public_bytes(serialization.Encoding.DER))
    return files


def ssl_environment(files: ClientFiles, password: str = KEYSTORE_PASSWORD, client_auth: str = "required") -> dict[str, str]:
    """The ``SSL_*`` variables trivup exports and 0097 reads (its
    ``envname`` table, ``SSL_password`` and ``SSL_client_auth``: the SSL
    listener's ``ssl.client.auth``)."""
    return {
        "SSL_pkcs": str(files.pkcs12),
        "SSL_pub_der": str(files.cert_der),
        "SSL_pub_pem": str(files.cert_pem),
        "SSL_priv_der": str(files.key_der),
        "SSL_priv_pem": str(files.key_pem),
        "SSL_ca_der": str(files.ca_der),
        "SSL_all_cas_pem": str(files.ca_pem),
        "SSL_password": password,
        "SSL_client_auth": client_auth,
    }


def secured_test_conf(bootstrap: str, username: str, password: str, files: ClientFiles, *,
                      mechanism: str = MECHANISM, timeout_multiplier: int = 3,
                      keystore_password: str = KEYSTORE_PASSWORD) -> str:
    """The suite's ``test.conf`` for the ``SASL_SSL`` listener (see the
    module docstring)."""
    lines = {
        "bootstrap.servers": bootstrap,
        "test.timeout.multiplier": str(timeout_multiplier),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": username,
        "sasl.password": password,
        "ssl.ca.location": str(files.ca_pem),
        "ssl.certificate.location": str(files.cert_pem),
        "ssl.key.location": str(files.key_pem),
        "ssl.key.password": keystore_password,
    }
    for key, value in lines.items():
        if "\n" in value or "\r" in value:
            raise ValueError(f"test.conf: {key} must be one line")
    return "".join(f"{k}={v}\n" for k, v in lines.items())


@dataclass(frozen=True, slots=True)
class SecuredScenario:
    """What a secured test's run is given: its ``test.conf`` text and the
    environment variables to add."""

    test_conf: str
    environment: Mapping[str, str]


def secured_scenario(setup: SecureSetup, bootstrap: str, directory: Path, timeout_multiplier: int) -> SecuredScenario:
    """The client files written under ``directory`` and the scenario for a
    cluster secured by ``setup`` (the ``admin`` super user's SCRAM
    credentials on its ``SASL_SSL`` listener)."""
    files = write_client_files(setup.pki, directory)
    return SecuredScenario(secured_test_conf(bootstrap, ADMIN_USER, setup.passwords[ADMIN_USER], files,
                                             timeout_multiplier=timeout_multiplier),
                           ssl_environment(files))
