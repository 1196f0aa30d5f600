"""TLS contexts from Kafka's ``ssl.*`` keys (Kafka's ``DefaultSslEngineFactory``).

One function per side: ``server_context(config)`` for a listener (SSL or
SASL_SSL), ``client_context(config)`` for the connections this process opens
to brokers. ``config`` is anything with ``config[key]`` and
``config.source(key)`` (the config key a value came from, for messages):
a listener's ``ListenerConfig``, or a client's properties.

Keys and what they do here:

- keystore — this side's private key and certificate chain:
  ``ssl.keystore.type`` PKCS12 (``ssl.keystore.location``,
  ``ssl.keystore.password``, and ``ssl.key.password`` when the key's own
  password differs), PEM (``ssl.keystore.location`` of a file holding the
  key and the chain, or ``ssl.keystore.key`` and
  ``ssl.keystore.certificate.chain`` inline; ``ssl.key.password`` decrypts
  an encrypted key; a store password is refused, as Kafka refuses it), or
  JKS — read as PKCS12, which is what ``keytool`` writes since Java 9 and
  what Java's JKS keystore type reads too; a legacy JKS file is refused with
  the ``keytool -importkeystore`` command that converts it. A server must
  have one; a client presents one only for mutual TLS.
- truststore — the CAs trusted to sign the peer's certificate: PKCS12/JKS
  (``ssl.truststore.location``, ``ssl.truststore.password``) or PEM (a file,
  or ``ssl.truststore.certificates`` inline). Without one, the system's CAs
  (as the JVM falls back to its ``cacerts``).
- ``ssl.client.auth`` (server): ``required`` — a client without a
  certificate signed by a trusted CA fails the handshake; ``requested`` —
  a certificate is asked for and verified when sent; ``none``.
- ``ssl.enabled.protocols`` and ``ssl.protocol``: the versions offered are
  the enabled ones up to the version ``ssl.protocol`` names (``TLS``: any).
- ``ssl.cipher.suites``: IANA names as Java and Kafka take them (OpenSSL's
  names are accepted too). Python's ssl configures TLS 1.3 suites only as a
  whole: a list naming none of them turns TLS 1.3 off (as in Java, where
  TLS 1.3 needs one of its suites); a list naming some but not all of the
  three OpenSSL offers is refused, since it cannot be honoured.
- ``ssl.endpoint.identification.algorithm`` (client): ``https`` checks the
  server's certificate against the host name connected to; empty does not
  (the chain is verified either way).

Python's ``load_cert_chain`` reads files only: a key that did not come as a
PEM file is written, encrypted under a one-time random password, to a
private (0600) temporary file that is removed as soon as it is loaded.
Every failure is a ``ConfigError`` naming the key and the file; a password
never appears in one.

Any thread (reads files; call at startup, not on the event loop's hot path).
"""

from __future__ import annotations

import os
import re
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

# cryptography takes about 0.15 s of CPU to import: it is imported by the
# functions that read keys and certificates, so a process that never
# configures TLS (a Spark Python worker, a plaintext client) does not pay it.
if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from kavka.common.config import ConfigError, Password


class SslConfigSource(Protocol):
    def __getitem__(self, key: str) -> Any: ...

    def source(self, key: str) -> str: ...


# IANA cipher suite names (what Java and Kafka's ssl.cipher.suites take) ->
# TLS code points (RFC 5246, 5288, 5289, 6655, 7905, 8446). OpenSSL's
# ``SSLContext.get_ciphers()`` gives each suite's code point in its id.
IANA_CIPHER_SUITES: dict[str, int] = {
    "TLS_AES_128_GCM_SHA256": 0x1301,
    "TLS_AES_256_GCM_SHA384": 0x1302,
    "TLS_CHACHA20_POLY1305_SHA256": 0x1303,
    "TLS_RSA_WITH_AES_128_CBC_SHA": 0x002F,
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA": 0x0032,
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA": 0x0033,
    "TLS_RSA_WITH_AES_256_CBC_SHA": 0x0035,
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA": 0x0038,
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA": 0x0039,
    "TLS_RSA_WITH_AES_128_CBC_SHA256": 0x003C,
    "TLS_RSA_WITH_AES_256_CBC_SHA256": 0x003D,
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256": 0x0040,
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": 0x0067,
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256": 0x006A,
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": 0x006B,
    "TLS_RSA_WITH_AES_128_GCM_SHA256": 0x009C,
    "TLS_RSA_WITH_AES_256_GCM_SHA384": 0x009D,
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": 0x009E,
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": 0x009F,
    "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256": 0x00A2,
    "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384": 0x00A3,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": 0xC009,
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": 0xC00A,
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": 0xC013,
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": 0xC014,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": 0xC023,
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": 0xC024,
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": 0xC027,
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": 0xC028,
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": 0xC02B,
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": 0xC02C,
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": 0xC02F,
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": 0xC030,
    "TLS_RSA_WITH_AES_128_CCM": 0xC09C,
    "TLS_RSA_WITH_AES_256_CCM": 0xC09D,
    "TLS_DHE_RSA_WITH_AES_128_CCM": 0xC09E,
    "TLS_DHE_RSA_WITH_AES_256_CCM": 0xC09F,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CCM": 0xC0AC,
    "TLS_ECDHE_ECDSA_WITH_AES_256_CCM": 0xC0AD,
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA8,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA9,
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCAA,
}
# Java lists this signalling value among its suites; OpenSSL always signals
# secure renegotiation, so naming it asks for what is already there.
RENEGOTIATION_SCSV = "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n.*?-----END \1-----", re.DOTALL)


@dataclass(frozen=True, slots=True)
class KeyStore:
    """A private key and its certificate chain, leaf first."""

    key: PrivateKeyTypes
    chain: tuple[x509.Certificate, ...]
    where: str  # the key and file it came from, for messages

    @property
    def certificate_der(self) -> bytes:
        from cryptography.hazmat.primitives import serialization
        return self.chain[0].public_bytes(serialization.Encoding.DER)


def _secret(config: SslConfigSource, key: str) -> str | None:
    value = config[key]
    if value is None:
        return None
    return value.value if isinstance(value, Password) else str(value)


def _read(config: SslConfigSource, key: str) -> bytes:
    path = config[key]
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ConfigError(config.source(key), f"cannot read {path}: {e.strerror or e}") from None


def _pkcs12_bytes(config: SslConfigSource, location_key: str, type_key: str) -> bytes:
    data = _read(config, location_key)
    if config[type_key].upper() == "JKS" and data.startswith(_JKS_MAGIC):
        path = config[location_key]
        raise ConfigError(config.source(type_key),
                          f"{path} is a legacy JKS keystore, which Kavka cannot read; convert it to PKCS12: "
                          f"keytool -importkeystore -srckeystore {path} -destkeystore {path}.p12 "
                          f"-deststoretype PKCS12, then set {config.source(location_key)} to the .p12 file "
                          f"and {config.source(type_key)}=PKCS12")
    return data


def _pem_blocks(data: bytes, where: str, key: str) -> tuple[list[bytes], list[bytes]]:
    """(private key blocks, certificate blocks) of PEM text."""
    keys, certs = [], []
    for m in _PEM_BLOCK.finditer(data):
        label = m.group(1)
        if label == b"CERTIFICATE":
            certs.append(m.group(0))
        elif label.endswith(b"PRIVATE KEY"):
            keys.append(m.group(0))
    if not keys and not certs:
        raise ConfigError(key, f"{where} holds no PEM block (-----BEGIN CERTIFICATE----- or -----BEGIN PRIVATE KEY-----)")
    return keys, certs


def _load_pem_key(block: bytes, password: str | None, key: str, password_key: str, where: str) -> PrivateKeyTypes:
    from cryptography.hazmat.primitives import serialization
    try:
        return serialization.load_pem_private_key(block, password.encode() if password is not None else None)
    except TypeError:
        if password is None:
            raise ConfigError(password_key, f"the private key in {where} is encrypted; set {password_key}") from None
        raise ConfigError(password_key, f"the private key in {where} is not encrypted; remove {password_key}") from None
    except ValueError:
        if password is not None:
            raise ConfigError(password_key, f"does not decrypt the private key in {where} "
                                            "(wrong password, or the key is damaged)") from None
        raise ConfigError(key, f"{where} does not hold a private key Kavka can read (PKCS#8 PEM)") from None


def _certificates(blocks: list[bytes], key: str, where: str) -> list[x509.Certificate]:
    from cryptography import x509
    out = []
    for block in blocks:
        try:
            out.append(x509.load_pem_x509_certificate(block))
        except ValueError:
            raise ConfigError(key, f"a certificate in {where} cannot be read") from None
    return out


def load_keystore(config: SslConfigSource) -> KeyStore | None:
    """This side's key and chain, or None when no keystore is configured."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    kind = config["ssl.keystore.type"].upper()
    location, inline_key, inline_chain = (config["ssl.keystore.location"], config["ssl.keystore.key"],
                                          config["ssl.keystore.certificate.chain"])
    key_password = _secret(config, "ssl.key.password")
    if kind == "PEM":
        if config["ssl.keystore.password"] is not None:
            raise ConfigError(config.source("ssl.keystore.password"),
                              "cannot be set with ssl.keystore.type=PEM; only ssl.key.password may be "
                              "(it decrypts the key)")
        if location is not None and (inline_key is not None or inline_chain is not None):
            raise ConfigError(config.source("ssl.keystore.location"),
                              "set either ssl.keystore.location or ssl.keystore.key with "
                              "ssl.keystore.certificate.chain, not both")
        if location is None and inline_key is None and inline_chain is None:
            return None
        if location is not None:
            where, key_key = location, config.source("ssl.keystore.location")
            keys, certs = _pem_blocks(_read(config, "ssl.keystore.location"), where, key_key)
            chain_key = key_key
        else:
            if inline_key is None or inline_chain is None:
                missing = "ssl.keystore.key" if inline_key is None else "ssl.keystore.certificate.chain"
                raise ConfigError(config.source(missing), "is required with ssl.keystore.key / "
                                  "ssl.keystore.certificate.chain: give both, in PEM")
            key_key, chain_key = config.source("ssl.keystore.key"), config.source("ssl.keystore.certificate.chain")
            where = key_key
            keys, _ = _pem_blocks(inline_key.value.encode(), key_key, key_key)
            _, certs = _pem_blocks(inline_chain.value.encode(), chain_key, chain_key)
        if len(keys) != 1:
            raise ConfigError(key_key, f"{where} holds {len(keys)} private keys; expected exactly one")
        if not certs:
            raise ConfigError(chain_key, f"{where} holds no certificate; the chain starts with this side's certificate")
        private_key = _load_pem_key(keys[0], key_password, key_key, config.source("ssl.key.password"), where)
        store = KeyStore(private_key, tuple(_certificates(certs, chain_key, where)), where)
    else:
        for inline in ("ssl.keystore.key", "ssl.keystore.certificate.chain"):
            if config[inline] is not None:
                raise ConfigError(config.source(inline), f"is only read with ssl.keystore.type=PEM (it is {kind})")
        if location is None:
            return None
        where = location
        data = _pkcs12_bytes(config, "ssl.keystore.location", "ssl.keystore.type")
        store_password = _secret(config, "ssl.keystore.password")
        loaded = None
        for password in dict.fromkeys((store_password, key_password)):
            try:
                loaded = pkcs12.load_key_and_certificates(data, password.encode() if password is not None else None)
                break
            except ValueError:
                continue
        if loaded is None:
            raise ConfigError(config.source("ssl.keystore.password"),
                              f"does not open {where} (wrong password, or not a PKCS12 file)")
        p12_key, cert, extra = loaded
        if p12_key is None or cert is None:
            raise ConfigError(config.source("ssl.keystore.location"),
                              f"{where} holds no private key with its certificate (is it a truststore?)")
        store = KeyStore(p12_key, (cert, *extra), where)
    leaf_key = store.chain[0].public_key()
    if leaf_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo) != \
            store.key.public_key().public_bytes(serialization.Encoding.DER,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo):
        raise ConfigError(config.source("ssl.keystore.location") if location else config.source("ssl.keystore.key"),
                          f"the private key in {where} does not belong to its first certificate "
                          f"({store.chain[0].subject.rfc4514_string()})")
    return store


def load_truststore(config: SslConfigSource) -> list[x509.Certificate] | None:
    """The trusted CA certificates, or None when no truststore is configured."""
    from cryptography.hazmat.primitives.serialization import pkcs12
    kind = config["ssl.truststore.type"].upper()
    location, inline = config["ssl.truststore.location"], config["ssl.truststore.certificates"]
    if kind == "PEM":
        if config["ssl.truststore.password"] is not None:
            raise ConfigError(config.source("ssl.truststore.password"),
                              "cannot be set with ssl.truststore.type=PEM (PEM certificates have no password)")
        if location is not None and inline is not None:
            raise ConfigError(config.source("ssl.truststore.location"),
                              "set either ssl.truststore.location or ssl.truststore.certificates, not both")
        if location is None and inline is None:
            return None
        key = config.source("ssl.truststore.location" if location is not None else "ssl.truststore.certificates")
        where = location if location is not None else key
        data = _read(config, "ssl.truststore.location") if location is not None else inline.value.encode()
        _, blocks = _pem_blocks(data, where, key)
        if not blocks:
            raise ConfigError(key, f"{where} holds no certificate")
        return _certificates(blocks, key, where)
    if inline is not None:
        raise ConfigError(config.source("ssl.truststore.certificates"),
                          f"is only read with ssl.truststore.type=PEM (it is {kind})")
    if location is None:
        return None
    data = _pkcs12_bytes(config, "ssl.truststore.location", "ssl.truststore.type")
    password = _secret(config, "ssl.truststore.password")
    try:
        p12 = pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError:
        raise ConfigError(config.source("ssl.truststore.password"),
                          f"does not open {location} (wrong password, or not a PKCS12 file)") from None
    certs = [c.certificate for c in p12.additional_certs]
    if p12.cert is not None:
        certs.insert(0, p12.cert.certificate)
    if not certs:
        raise ConfigError(config.source("ssl.truststore.location"), f"{location} holds no certificate")
    return certs


def _load_chain(ctx: ssl.SSLContext, store: KeyStore) -> None:
    """``load_cert_chain`` from a private temporary file: the key encrypted
    under a one-time password, the file removed as soon as it is read."""
    from cryptography.hazmat.primitives import serialization
    one_time = secrets.token_hex(32)
    pem = store.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(one_time.encode()))
    pem += b"".join(c.public_bytes(serialization.Encoding.PEM) for c in store.chain)
    fd, path = tempfile.mkstemp(prefix="kavka-keystore-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        ctx.load_cert_chain(path, password=one_time)
    finally:
        os.unlink(path)


def _trust(ctx: ssl.SSLContext, certs: list[x509.Certificate] | None, purpose: ssl.Purpose) -> None:
    from cryptography.hazmat.primitives import serialization
    if certs is None:
        ctx.load_default_certs(purpose)
    else:
        ctx.load_verify_locations(cadata=b"".join(c.public_bytes(serialization.Encoding.DER) for c in certs))


def _versions_and_ciphers(ctx: ssl.SSLContext, config: SslConfigSource) -> None:
    enabled = [_TLS_VERSIONS[v] for v in config["ssl.enabled.protocols"]]
    if not enabled:
        raise ConfigError(config.source("ssl.enabled.protocols"), "is empty; allowed: TLSv1.2, TLSv1.3")
    cap = _TLS_VERSIONS.get(config["ssl.protocol"], ssl.TLSVersion.TLSv1_3)
    lowest, highest = min(enabled), min(max(enabled), cap)
    suites = config["ssl.cipher.suites"]
    if suites:
        available = {c["name"]: c for c in _all_ciphers()}
        by_code = {c["id"] & 0xFFFF: c for c in available.values()}
        tls13: set[str] = set()
        tls12: list[str] = []
        for name in suites:
            if name == RENEGOTIATION_SCSV:
                continue
            code = IANA_CIPHER_SUITES.get(name)
            cipher = by_code.get(code) if code is not None else available.get(name)
            if cipher is None:
                raise ConfigError(config.source("ssl.cipher.suites"),
                                  f"cipher suite {name!r} is not one this OpenSSL ({ssl.OPENSSL_VERSION}) offers; "
                                  f"use IANA names such as TLS_AES_256_GCM_SHA384 or "
                                  f"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
            (tls13.add if cipher["protocol"] == "TLSv1.3" else tls12.append)(cipher["name"])
        default13 = {c["name"] for c in available.values() if c["protocol"] == "TLSv1.3"}
        if tls13 and tls13 != default13:
            raise ConfigError(config.source("ssl.cipher.suites"),
                              f"names the TLS 1.3 suites {', '.join(sorted(tls13))} but not "
                              f"{', '.join(sorted(default13 - tls13))}: Python's ssl enables TLS 1.3 suites "
                              "only all together; list all of them, or none (which turns TLS 1.3 off)")
        if not tls13:
            highest = min(highest, ssl.TLSVersion.TLSv1_2)
        if tls12:
            ctx.set_ciphers(":".join(tls12))
        else:
            lowest = max(lowest, ssl.TLSVersion.TLSv1_3)
    if lowest > highest:
        raise ConfigError(config.source("ssl.enabled.protocols"),
                          f"no TLS version is left to negotiate: enabled {', '.join(config['ssl.enabled.protocols'])}"
                          f", {config.source('ssl.protocol')}={config['ssl.protocol']}"
                          + (f", {config.source('ssl.cipher.suites')} as given" if suites else ""))
    ctx.minimum_version, ctx.maximum_version = lowest, highest


_CIPHERS: list[Any] = []  # ssl's _Cipher dicts, read once


def _all_ciphers() -> list[Any]:
    if not _CIPHERS:
        probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        probe.set_ciphers("ALL")
        _CIPHERS.extend(probe.get_ciphers())
    return _CIPHERS


_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def server_context(config: SslConfigSource, keystore: KeyStore | None = None) -> ssl.SSLContext:
    """The context of an SSL or SASL_SSL listener (see the module
    docstring). ``keystore`` may be given when already loaded."""
    store = keystore if keystore is not None else load_keystore(config)
    if store is None:
        raise ConfigError(config.source("ssl.keystore.location"),
                          "a TLS listener needs a keystore: set ssl.keystore.location (PKCS12 or PEM), or "
                          "ssl.keystore.key and ssl.keystore.certificate.chain with ssl.keystore.type=PEM")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.options |= ssl.OP_NO_RENEGOTIATION  # a client-initiated renegotiation costs the server a handshake
    _versions_and_ciphers(ctx, config)
    _load_chain(ctx, store)
    mode = _CLIENT_AUTH[config["ssl.client.auth"].lower()]
    ctx.verify_mode = mode
    if mode != ssl.CERT_NONE:
        _trust(ctx, load_truststore(config), ssl.Purpose.CLIENT_AUTH)
    return ctx


def client_context(config: SslConfigSource, keystore: KeyStore | None = None) -> ssl.SSLContext:
    """The context of a client connection to a TLS listener: the server's
    chain verified against the truststore, its host name checked with
    ``ssl.endpoint.identification.algorithm=https``, this side's keystore
    presented when one is configured (mutual TLS)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _versions_and_ciphers(ctx, config)
    ctx.check_hostname = (config["ssl.endpoint.identification.algorithm"] or "").lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    _trust(ctx, load_truststore(config), ssl.Purpose.SERVER_AUTH)
    store = keystore if keystore is not None else load_keystore(config)
    if store is not None:
        _load_chain(ctx, store)
    return ctx
