"""Client security settings as client.properties give them, in either
dialect Kafka users write: librdkafka's (confluent-kafka, kcat) or the Java
client's (Kafka's tools, Spark's ``kafka.*`` options).

``client_security_from_properties(props, source)`` builds the
``ClientSecurity`` Kavka's own client uses; ``librdkafka_security_config``
turns the same settings into librdkafka's keys for the parts of Kavka that
talk through confluent-kafka (consumer groups, the Spark sink).

Keys (``SECURITY_KEYS``; any other ``ssl.*`` or ``sasl.*`` key is refused,
not ignored):

- ``security.protocol``: PLAINTEXT (default), SSL, SASL_PLAINTEXT,
  SASL_SSL, in any case (librdkafka writes them lower-case).
- SASL: ``sasl.mechanism`` (librdkafka also ``sasl.mechanisms``) with
  ``sasl.username`` and ``sasl.password`` (librdkafka) or
  ``sasl.jaas.config`` (Java); OAUTHBEARER as ``kavka.security.sasl.factory``
  reads it.
- Trusted CAs: ``ssl.ca.location`` (a PEM file) or ``ssl.ca.pem``
  (librdkafka); ``ssl.truststore.location``/``type``/``password`` or
  ``ssl.truststore.certificates`` (Java). Without any, the system's CAs.
- This client's certificate (mutual TLS): ``ssl.certificate.location`` and
  ``ssl.key.location`` (PEM files; ``ssl.certificate.pem``/``ssl.key.pem``
  inline) with ``ssl.key.password`` (librdkafka); ``ssl.keystore.location``
  (PKCS12 in both dialects; Java's ``ssl.keystore.type`` PEM, PKCS12 or JKS)
  with ``ssl.keystore.password``, ``ssl.keystore.key`` /
  ``ssl.keystore.certificate.chain`` inline (Java).
- ``ssl.endpoint.identification.algorithm``: ``https`` (the default in both
  clients) checks the broker's certificate names the host connected to;
  empty or ``none`` does not. ``enable.ssl.certificate.verification=false``
  (librdkafka) skips verifying the broker's certificate at all.
- ``ssl.enabled.protocols``, ``ssl.protocol``, ``ssl.cipher.suites`` (Java;
  cipher suites by IANA or OpenSSL name).

TLS keys with a protocol that does not use TLS, or SASL keys without SASL,
are refused (a setting that would silently do nothing is a mistake). Every
error is a ``ValueError`` naming ``source`` and the key, never a secret.

Any thread: reads files (keystores) while building; call before the event
loop's hot path (at client start).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any

from kavka.common.config import ConfigError, Password
from kavka.security import tls
from kavka.security.client_security import SECURITY_PROTOCOLS, ClientSecurity
from kavka.security.sasl.mechanism import OAUTHBEARER, SUPPORTED_MECHANISMS

# The SASL mechanisms (kavka.security.sasl.factory, .jaas: SCRAM,
# OAUTHBEARER and their dependencies) are imported by the functions that use
# them, when the settings name a SASL protocol: a plaintext or TLS client (each
# Spark query's planning process, an executor's reader) does not pay for them.

SASL_KEYS: tuple[str, ...] = (
    "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password", "sasl.jaas.config",
    "sasl.oauthbearer.config", "enable.sasl.oauthbearer.unsecure.jwt")
LIBRDKAFKA_SSL_KEYS: tuple[str, ...] = (
    "ssl.ca.location", "ssl.ca.pem", "ssl.certificate.location", "ssl.certificate.pem", "ssl.key.location",
    "ssl.key.pem", "enable.ssl.certificate.verification")
JAVA_SSL_KEYS: tuple[str, ...] = (
    "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.keystore.type", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.enabled.protocols",
    "ssl.protocol")
# In both dialects (librdkafka's ssl.keystore.* are PKCS12 files).
SHARED_SSL_KEYS: tuple[str, ...] = (
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.endpoint.identification.algorithm",
    "ssl.cipher.suites")
SSL_KEYS = LIBRDKAFKA_SSL_KEYS + JAVA_SSL_KEYS + SHARED_SSL_KEYS
SECURITY_KEYS: tuple[str, ...] = ("security.protocol", *SASL_KEYS, *SSL_KEYS)
# Keys whose values are secrets: never echoed in a message.
SECRET_KEYS = frozenset({"sasl.password", "sasl.jaas.config", "ssl.key.password", "ssl.keystore.password",
                         "ssl.truststore.password", "ssl.key.pem", "ssl.keystore.key", "sasl.oauthbearer.config"})

# The Java client's defaults for the keys kavka.security.tls reads.
_SSL_DEFAULTS: dict[str, Any] = {
    "ssl.keystore.type": "JKS", "ssl.keystore.location": None, "ssl.keystore.password": None,
    "ssl.keystore.key": None, "ssl.keystore.certificate.chain": None, "ssl.key.password": None,
    "ssl.truststore.type": "JKS", "ssl.truststore.location": None, "ssl.truststore.password": None,
    "ssl.truststore.certificates": None, "ssl.enabled.protocols": ["TLSv1.2", "TLSv1.3"],
    "ssl.protocol": "TLSv1.3", "ssl.cipher.suites": [], "ssl.endpoint.identification.algorithm": "https",
}
_TLS_PROTOCOLS = ("SSL", "SASL_SSL")
_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


class _SslSettings:
    """The view ``kavka.security.tls`` reads (Java's keys, typed values),
    with ``source`` naming the key the user actually wrote."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.sources: dict[str, str] = {}

    def set(self, java_key: str, value: Any, written_as: str) -> None:
        self.values[java_key] = value
        self.sources[java_key] = written_as

    def __getitem__(self, key: str) -> Any:
        return self.values[key] if key in self.values else _SSL_DEFAULTS[key]

    def source(self, key: str) -> str:
        return self.sources.get(key, key)


def security_protocol(props: Mapping[str, str], source: str) -> str:
    value = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if value not in SECURITY_PROTOCOLS:
        raise ValueError(f"{source}: security.protocol={props.get('security.protocol')!r} is not one of "
                         f"{', '.join(SECURITY_PROTOCOLS)}")
    return value


def _check_keys(props: Mapping[str, str], source: str, protocol: str) -> None:
    for key in props:
        if key.startswith(("ssl.", "sasl.")) and key not in SECURITY_KEYS:
            raise ValueError(f"{source}: {key!r} is not a security setting Kavka's client knows; known: "
                             f"{', '.join(SECURITY_KEYS)}")
    ssl_given = [k for k in SSL_KEYS if k in props]
    if ssl_given and protocol not in _TLS_PROTOCOLS:
        raise ValueError(f"{source}: {ssl_given[0]} is set but security.protocol is {protocol}, which does not "
                         "use TLS (set security.protocol=SSL or SASL_SSL)")
    sasl_given = [k for k in SASL_KEYS if k in props]
    if sasl_given and protocol not in _SASL_PROTOCOLS:
        raise ValueError(f"{source}: {sasl_given[0]} is set but security.protocol is {protocol}, which does not "
                         "use SASL (set security.protocol=SASL_PLAINTEXT or SASL_SSL)")


def _list(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def _read_text(props: Mapping[str, str], key: str, source: str) -> str:
    path = props[key]
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{source}: {key}: cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{source}: {key}: {path} is not a PEM file (not ASCII text)") from None


def _one_of(props: Mapping[str, str], source: str, a: tuple[str, ...], b: tuple[str, ...]) -> None:
    left, right = [k for k in a if k in props], [k for k in b if k in props]
    if left and right:
        raise ValueError(f"{source}: {left[0]} and {right[0]} both say which certificates to use; give one")


def ssl_settings(props: Mapping[str, str], source: str) -> _SslSettings:
    """The Java view of the TLS settings in ``props`` (either dialect)."""
    out = _SslSettings()
    _one_of(props, source, ("ssl.ca.location", "ssl.ca.pem"),
            ("ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.type",
             "ssl.truststore.password"))
    _one_of(props, source, ("ssl.certificate.location", "ssl.certificate.pem", "ssl.key.location", "ssl.key.pem"),
            ("ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.keystore.type",
             "ssl.keystore.password"))
    _one_of(props, source, ("ssl.ca.location",), ("ssl.ca.pem",))
    if "ssl.ca.location" in props:
        location = props["ssl.ca.location"]
        if os.path.isdir(location):
            raise ValueError(f"{source}: ssl.ca.location: {location} is a directory; give a PEM file of CA "
                             "certificates")
        out.set("ssl.truststore.type", "PEM", "ssl.ca.location")
        out.set("ssl.truststore.location", location, "ssl.ca.location")
    if "ssl.ca.pem" in props:
        out.set("ssl.truststore.type", "PEM", "ssl.ca.pem")
        out.set("ssl.truststore.certificates", Password(props["ssl.ca.pem"]), "ssl.ca.pem")
    cert_keys = ("ssl.certificate.location", "ssl.certificate.pem")
    key_keys = ("ssl.key.location", "ssl.key.pem")
    _one_of(props, source, ("ssl.certificate.location",), ("ssl.certificate.pem",))
    _one_of(props, source, ("ssl.key.location",), ("ssl.key.pem",))
    cert_key = next((k for k in cert_keys if k in props), None)
    key_key = next((k for k in key_keys if k in props), None)
    if (cert_key is None) != (key_key is None):
        missing = "ssl.certificate.location" if cert_key is None else "ssl.key.location"
        raise ValueError(f"{source}: {key_key or cert_key} is set without {missing}: a client certificate needs "
                         "both its certificate and its private key")
    if cert_key is not None and key_key is not None:
        chain = props[cert_key] if cert_key.endswith(".pem") else _read_text(props, cert_key, source)
        key = props[key_key] if key_key.endswith(".pem") else _read_text(props, key_key, source)
        out.set("ssl.keystore.type", "PEM", key_key)
        out.set("ssl.keystore.key", Password(key), key_key)
        out.set("ssl.keystore.certificate.chain", Password(chain), cert_key)
    for key in ("ssl.truststore.location", "ssl.truststore.type", "ssl.keystore.location", "ssl.keystore.type",
                "ssl.protocol"):
        if key in props:
            out.set(key, props[key].strip(), key)
    for key in ("ssl.truststore.password", "ssl.keystore.password", "ssl.key.password"):
        if key in props:
            out.set(key, Password(props[key]), key)
    for key in ("ssl.truststore.certificates", "ssl.keystore.key", "ssl.keystore.certificate.chain"):
        if key in props:
            out.set(key, Password(props[key]), key)
    for key in ("ssl.enabled.protocols", "ssl.cipher.suites"):
        if key in props:
            out.set(key, _list(props[key]), key)
    if "ssl.enabled.protocols" in props:
        unknown = [v for v in out["ssl.enabled.protocols"] if v not in ("TLSv1.2", "TLSv1.3")]
        if unknown:
            raise ValueError(f"{source}: ssl.enabled.protocols: {', '.join(unknown)} not allowed; "
                             "allowed: TLSv1.2, TLSv1.3")
    if "ssl.endpoint.identification.algorithm" in props:
        algorithm = props["ssl.endpoint.identification.algorithm"].strip().lower()
        if algorithm not in ("https", "", "none"):
            raise ValueError(f"{source}: ssl.endpoint.identification.algorithm={algorithm!r}: use https "
                             "(check the broker's name) or leave it empty / none (do not)")
        out.set("ssl.endpoint.identification.algorithm", "https" if algorithm == "https" else "",
                "ssl.endpoint.identification.algorithm")
    return out


def _verification(props: Mapping[str, str], source: str) -> bool:
    raw = props.get("enable.ssl.certificate.verification", "true").strip().lower()
    if raw not in ("true", "false"):
        raise ValueError(f"{source}: enable.ssl.certificate.verification must be true or false")
    return raw == "true"


def ssl_context_from_properties(props: Mapping[str, str], source: str) -> ssl.SSLContext:
    """The TLS context ``props`` describe (see the module docstring)."""
    settings = ssl_settings(props, source)
    try:
        ctx = tls.client_context(settings)
    except ConfigError as e:
        raise ValueError(f"{source}: {e}") from None
    if not _verification(props, source):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def client_security_from_properties(props: Mapping[str, str], source: str = "client properties") -> ClientSecurity:
    """The ``ClientSecurity`` that ``props`` describe; keys other than the
    security ones are left to the caller. Raises ValueError naming
    ``source`` and the key."""
    protocol = security_protocol(props, source)
    _check_keys(props, source, protocol)
    ctx = ssl_context_from_properties(props, source) if protocol in _TLS_PROTOCOLS else None
    mechanism = None
    factory = None
    if protocol in _SASL_PROTOCOLS:
        from kavka.security.sasl.factory import sasl_client_from_properties

        sasl_props = {k: v for k, v in props.items() if k in SASL_KEYS}
        first = sasl_client_from_properties(sasl_props, source=source)  # checks the settings now
        mechanism = first.mechanism

        def factory() -> Any:
            return sasl_client_from_properties(sasl_props, source=source)
    return ClientSecurity(protocol, ctx, mechanism, factory, source)


def _private_ca_file(certificates: list[Any]) -> str:
    """CA certificates as a PEM file for librdkafka, which reads CAs from
    PEM only. Certificates are public; the file is still private (0600) and
    removed when the process exits."""
    from cryptography.hazmat.primitives import serialization  # imported on use: see kavka.security.tls

    fd, path = tempfile.mkstemp(prefix="kavka-ca-", suffix=".pem")
    with os.fdopen(fd, "wb") as f:
        f.write(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates))
    atexit.register(_remove, path)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def librdkafka_security_config(props: Mapping[str, str], source: str = "client properties") -> dict[str, str]:
    """``props``' security settings in librdkafka's keys (for
    confluent-kafka): librdkafka's own keys pass as they are; the Java
    client's are translated (``sasl.jaas.config`` to ``sasl.username`` /
    ``sasl.password``, a PKCS12/JKS truststore to a PEM CA file, a PEM
    keystore file to ``ssl.certificate.location`` + ``ssl.key.location``).
    Settings librdkafka has no equivalent for are refused naming the key.
    The settings are checked as ``client_security_from_properties`` checks
    them."""
    client_security_from_properties(props, source)  # the same checks, the same messages
    protocol = security_protocol(props, source)
    out: dict[str, str] = {"security.protocol": protocol}
    for key in ("sasl.username", "sasl.password", "sasl.oauthbearer.config", "enable.sasl.oauthbearer.unsecure.jwt",
                *LIBRDKAFKA_SSL_KEYS, "ssl.key.password"):
        if key in props:
            out[key] = props[key]
    mechanism = props.get("sasl.mechanism", props.get("sasl.mechanisms"))
    if mechanism is not None:
        out["sasl.mechanism"] = mechanism.strip()
    if "sasl.jaas.config" in props and mechanism is not None:
        if mechanism.strip() == OAUTHBEARER:
            raise ValueError(f"{source}: sasl.jaas.config with OAUTHBEARER has no librdkafka equivalent here; "
                             "give sasl.oauthbearer.config with enable.sasl.oauthbearer.unsecure.jwt=true")
        assert mechanism.strip() in SUPPORTED_MECHANISMS
        from kavka.security.sasl.jaas import load_jaas_entry, login_credentials

        entry = load_jaas_entry(props["sasl.jaas.config"], mechanism.strip(), f"{source}: sasl.jaas.config")
        out["sasl.username"], out["sasl.password"] = login_credentials(entry, f"{source}: sasl.jaas.config")
    if "ssl.endpoint.identification.algorithm" in props:
        algorithm = props["ssl.endpoint.identification.algorithm"].strip().lower()
        out["ssl.endpoint.identification.algorithm"] = "https" if algorithm == "https" else "none"
    if "ssl.cipher.suites" in props:
        out["ssl.cipher.suites"] = ":".join(_list(props["ssl.cipher.suites"]))
    for key in ("ssl.enabled.protocols", "ssl.protocol", "ssl.keystore.key", "ssl.keystore.certificate.chain",
                "ssl.truststore.certificates"):
        if key in props:
            raise ValueError(f"{source}: {key} has no librdkafka equivalent, and this tool talks through "
                             "confluent-kafka (librdkafka); remove it, or use librdkafka's keys "
                             "(ssl.ca.location, ssl.certificate.location, ssl.key.location)")
    settings = ssl_settings(props, source)
    if "ssl.truststore.location" in props:
        if settings["ssl.truststore.type"].upper() == "PEM":
            out["ssl.ca.location"] = props["ssl.truststore.location"]
        else:
            try:
                certs = tls.load_truststore(settings)
            except ConfigError as e:
                raise ValueError(f"{source}: {e}") from None
            out["ssl.ca.location"] = _private_ca_file(certs or [])
    if "ssl.keystore.location" in props:
        if settings["ssl.keystore.type"].upper() == "PEM":
            out["ssl.certificate.location"] = out["ssl.key.location"] = props["ssl.keystore.location"]
        else:
            out["ssl.keystore.location"] = props["ssl.keystore.location"]
            if "ssl.keystore.password" in props:
                out["ssl.keystore.password"] = props["ssl.keystore.password"]
    return out
