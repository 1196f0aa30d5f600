"""SCRAM credentials as Kafka stores them (RFC 5802 §3, Kafka's
ScramCredential, ScramFormatter and ScramCredentialUtils).

A user's credential for one mechanism is the salt, the iteration count and
two keys derived from the password; the password itself is never stored.
In ZooKeeper, ``/config/users/<user>`` holds one config per mechanism::

    SCRAM-SHA-256=salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>

- ``ScramMechanism``: SCRAM-SHA-256 and SCRAM-SHA-512 with their hash, the
  minimum iteration count (4096, Kafka's ScramMechanism.minIterations) and
  the type id DescribeUserScramCredentials/AlterUserScramCredentials use.
- ``ScramCredential``: the stored value; ``parse`` refuses a malformed string
  with a message naming the field (never echoing a key), ``to_config_value``
  writes Kafka's format.
- ``ScramFormatter``: the RFC 5802 arithmetic (Hi, HMAC, H) and
  ``generate_credential`` from a password. Like Kafka, the password is
  UTF-8 encoded without SASLprep, so credentials carry over between Kafka
  and Kavka.

Pure values and functions; any thread.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from enum import Enum

# Kafka's ScramMechanism.minIterations (both mechanisms), and the largest
# count AlterUserScramCredentials accepts (KIP-554).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096
# A stored credential string is about 200 characters; this bound refuses
# hostile values before any decoding.
MAX_CREDENTIAL_LENGTH = 4096
_MAX_INT32 = 2**31 - 1


class ScramMechanism(Enum):
    """A SCRAM mechanism; ``value`` is its SASL name."""

    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"

    @property
    def mechanism_name(self) -> str:
        return self.value

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @property
    def digest_size(self) -> int:
        return 32 if self is ScramMechanism.SCRAM_SHA_256 else 64

    @property
    def min_iterations(self) -> int:
        return MIN_ITERATIONS

    @property
    def type_id(self) -> int:
        """org.apache.kafka.clients.admin.ScramMechanism's type byte (0 is UNKNOWN)."""
        return 1 if self is ScramMechanism.SCRAM_SHA_256 else 2

    @classmethod
    def of(cls, name: str) -> ScramMechanism | None:
        """The mechanism named ``name`` (``SCRAM-SHA-256``), None for any other name."""
        for m in cls:
            if m.value == name:
                return m
        return None

    @classmethod
    def of_type_id(cls, type_id: int) -> ScramMechanism | None:
        for m in cls:
            if m.type_id == type_id:
                return m
        return None


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One user's credential for one mechanism: the salt, the iteration count
    and RFC 5802's StoredKey (H(ClientKey)) and ServerKey. The keys are not
    in the repr: with them a process can pose as the broker."""

    salt: bytes
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int

    def to_config_value(self) -> str:
        """Kafka's stored form (ScramCredentialUtils.credentialToString)."""
        b64 = base64.b64encode
        return (f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
                f"server_key={b64(self.server_key).decode()},iterations={self.iterations}")

    @classmethod
    def parse(cls, text: str, mechanism: ScramMechanism) -> ScramCredential:
        """The credential in Kafka's stored form for ``mechanism`` (the config
        key it was stored under). Raises ValueError naming the field that is
        missing, repeated, unknown or malformed; the message never contains
        a key or salt."""
        what = f"{mechanism.mechanism_name} credential"
        if len(text) > MAX_CREDENTIAL_LENGTH:
            raise ValueError(f"{what} is longer than {MAX_CREDENTIAL_LENGTH} characters")
        fields: dict[str, str] = {}
        for i, token in enumerate(text.split(",")):
            name, sep, value = token.partition("=")
            if not sep or not name:
                raise ValueError(f"{what}: element {i + 1} is not name=value "
                                 "(expected salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>)")
            if name not in _FIELDS:
                raise ValueError(f"{what}: unknown field {name[:40]!r} (expected {', '.join(_FIELDS)})")
            if name in fields:
                raise ValueError(f"{what}: field {name!r} appears more than once")
            fields[name] = value
        missing = [f for f in _FIELDS if f not in fields]
        if missing:
            raise ValueError(f"{what}: field {missing[0]!r} is missing")
        salt = _b64_field(what, "salt", fields["salt"])
        stored_key = _b64_field(what, "stored_key", fields["stored_key"])
        server_key = _b64_field(what, "server_key", fields["server_key"])
        for name, key in (("stored_key", stored_key), ("server_key", server_key)):
            if len(key) != mechanism.digest_size:
                raise ValueError(f"{what}: field {name!r} has {len(key)} bytes; "
                                 f"{mechanism.mechanism_name} keys have {mechanism.digest_size}")
        iterations_text = fields["iterations"]
        if not re.fullmatch(r"[0-9]{1,10}", iterations_text) or not 0 < int(iterations_text) <= _MAX_INT32:
            raise ValueError(f"{what}: field 'iterations' is not a positive 32-bit integer")
        return cls(salt, stored_key, server_key, int(iterations_text))


_FIELDS = ("salt", "stored_key", "server_key", "iterations")
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _b64_field(what: str, name: str, value: str) -> bytes:
    """Standard base64; the padding may be left out, as Java's decoder allows."""
    if not value:
        raise ValueError(f"{what}: field {name!r} is empty")
    if not _B64.fullmatch(value) or len(value.rstrip("=")) % 4 == 1:
        raise ValueError(f"{what}: field {name!r} is not valid base64")
    padded = value + "=" * (-len(value) % 4)
    try:
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what}: field {name!r} is not valid base64") from None


def secure_random_string() -> str:
    """130 random bits in base 36, as Kafka's ScramFormatter.secureRandomString
    (used for nonces and salts)."""
    n = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    while True:
        n, r = divmod(n, 36)
        out.append(digits[r])
        if n == 0:
            break
    return "".join(reversed(out))


def xor_bytes(a: bytes, b: bytes) -> bytes:
    if len(a) != len(b):
        raise ValueError("xor of byte strings of different lengths")
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


class ScramFormatter:
    """RFC 5802 §3's functions for one mechanism (Kafka's ScramFormatter).
    Stateless; any thread."""

    __slots__ = ("mechanism",)

    def __init__(self, mechanism: ScramMechanism) -> None:
        self.mechanism = mechanism

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.mechanism.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.mechanism.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """Hi(Normalize(password), salt, i): PBKDF2 with HMAC; Normalize is
        UTF-8 without SASLprep, as Kafka."""
        return hashlib.pbkdf2_hmac(self.mechanism.hash_name, password.encode("utf-8"), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")

    def stored_key(self, client_key: bytes) -> bytes:
        return self.hash(client_key)

    def client_signature(self, stored_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(stored_key, auth_message)

    def server_signature(self, server_key: bytes, auth_message: bytes) -> bytes:
        return self.hmac(server_key, auth_message)

    def client_proof(self, salted_password: bytes, auth_message: bytes) -> bytes:
        client_key = self.client_key(salted_password)
        return xor_bytes(client_key, self.client_signature(self.stored_key(client_key), auth_message))

    def stored_key_from_proof(self, proof: bytes, stored_key: bytes, auth_message: bytes) -> bytes:
        """H(ClientProof XOR ClientSignature): equals the stored key iff the
        proof was made from the password (RFC 5802 §3, server side)."""
        return self.hash(xor_bytes(proof, self.client_signature(stored_key, auth_message)))

    def generate_credential(self, password: str, iterations: int = DEFAULT_ITERATIONS,
                            salt: bytes | None = None) -> ScramCredential:
        """The credential for ``password`` (a fresh random salt unless given).
        Raises ValueError for an empty password or an iteration count outside
        [4096, 16384] (Kafka's bounds for AlterUserScramCredentials)."""
        if not password:
            raise ValueError("a SCRAM password must not be empty")
        if iterations < self.mechanism.min_iterations:
            raise ValueError(f"Too few iterations: {iterations} is less than the minimum "
                             f"{self.mechanism.min_iterations} for {self.mechanism.mechanism_name}")
        if iterations > MAX_ITERATIONS:
            raise ValueError(f"Too many iterations: {iterations} is more than the maximum "
                             f"{MAX_ITERATIONS} for {self.mechanism.mechanism_name}")
        if salt is None:
            salt = secure_random_string().encode("ascii")
        if not salt:
            raise ValueError("a SCRAM salt must not be empty")
        salted = self.salted_password(password, salt, iterations)
        return self.credential_from_salted_password(salted, salt, iterations)

    def credential_from_salted_password(self, salted_password: bytes, salt: bytes,
                                        iterations: int) -> ScramCredential:
        """The credential from a salted password (AlterUserScramCredentials
        carries the salted password, not the password: KIP-554)."""
        return ScramCredential(salt, self.stored_key(self.client_key(salted_password)),
                               self.server_key(salted_password), iterations)
