"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), both sides.

The exchange (RFC 5802 §5)::

    client-first  n,,n=<saslname>,r=<client nonce>[,<ext>=<value>...]
    server-first  r=<client nonce><server nonce>,s=<b64 salt>,i=<iterations>
    client-final  c=<b64 gs2 header>,r=<nonce>,p=<b64 ClientProof>
    server-final  v=<b64 ServerSignature>     (or e=<error>)

``ScramSaslServer`` checks the proof against the stored credential and
answers with its signature; ``ScramSaslClient`` derives the proof from the
password and checks the server's signature, so each side proves it knows
the credential. Messages are parsed by hand against RFC 5802 §7's grammar
(bounded at 4096 bytes like Kafka's ScramMessages).

Where the RFC and Kafka differ, the server follows the RFC: the channel
binding must be the base64 of the client's gs2 header, the final nonce must
be the combined nonce — or, from librdkafka before 2.6.1, the client nonce
followed by the combined nonce (librdkafka#4895: it prepends its own nonce
once more; Kafka 3.8.1+ accepts any final nonce ending with the combined
one, Kavka exactly this form, which still carries this exchange's server
nonce) — the reserved ``m=`` extension fails authentication,
user names may be any UTF-8. An unknown user (or a stored credential below
4096 iterations) is not refused at the first message, as Kafka does, but
answered with a salt derived from a per-broker secret and refused after the
proof (RFC 5802 §9): the reply never tells whether a user exists. Kafka's
``tokenauth`` extension (delegation tokens, KIP-48) is refused: Kavka has no
delegation tokens, and Kafka refuses an unknown token the same way.

Not thread-safe: one object per exchange.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

from kavka.security.sasl.credentials import (
    DEFAULT_ITERATIONS,
    ScramCredential,
    ScramFormatter,
    ScramMechanism,
    secure_random_string,
)
from kavka.security.sasl.errors import IllegalSaslStateError, SaslAuthenticationError, invalid_credentials_message

# Kafka's ScramMessages.MAX_MESSAGE_LENGTH
MAX_MESSAGE_LENGTH = 4096
# The most iterations a client computes for a server (PBKDF2 at a hostile
# server's request is CPU time; Kafka stores at most 16384 through the API).
DEFAULT_CLIENT_MAX_ITERATIONS = 1_000_000
TOKENAUTH_EXTENSION = "tokenauth"

# (mechanism name, user name) -> the stored credential, None when there is none
ScramCredentialLookup = Callable[[str, str], ScramCredential | None]

_PRINTABLE = re.compile(r"[\x21-\x2b\x2d-\x7e]+")
_ALPHA = re.compile(r"[A-Za-z]+")
_B64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class ScramFormatError(ValueError):
    """A SCRAM message that does not follow RFC 5802 §7 (the text says how)."""


def sasl_name(username: str) -> str:
    """RFC 5802 §5.1: ``=`` and ``,`` in a user name are sent as =3D and =2C."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_of(name: str) -> str:
    """The user name a saslname stands for; ScramFormatError when it has an
    ``=`` not starting =2C or =3D, or is empty."""
    if not name:
        raise ScramFormatError("empty user name")
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramFormatError("user name has '=' not starting =2C or =3D")
    return name.replace("=2C", ",").replace("=3D", "=")


def _decode(message: bytes, what: str) -> str:
    if len(message) > MAX_MESSAGE_LENGTH:
        raise ScramFormatError(f"{what} is {len(message)} bytes, more than {MAX_MESSAGE_LENGTH}")
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramFormatError(f"{what} is not UTF-8") from None
    if "\x00" in text:
        raise ScramFormatError(f"{what} contains NUL")
    return text


def _b64decode(value: str, what: str) -> bytes:
    if not _B64.fullmatch(value):
        raise ScramFormatError(f"{what} is not base64")
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ScramFormatError(f"{what} is not base64") from None
    # canonical only (RFC 4648 §3.5): one encoding per value, so no two
    # different messages carry the same proof
    if base64.b64encode(decoded).decode("ascii") != value:
        raise ScramFormatError(f"{what} is not canonical base64")
    return decoded


def _attribute(part: str, name: str, what: str) -> str:
    if not part.startswith(name + "="):
        raise ScramFormatError(f"{what}: expected {name}= but found {part[:1]!r}")
    return part[len(name) + 1:]


def _extensions(parts: list[str], what: str) -> dict[str, str]:
    """attr-val *("," attr-val), attr-val = ALPHA "=" value (value non-empty)."""
    out: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not _ALPHA.fullmatch(key) or not value:
            raise ScramFormatError(f"{what}: malformed extension")
        out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class ClientFirstMessage:
    """gs2-header client-first-message-bare; ``bare`` as received (the auth
    message is computed over the exact text)."""

    gs2_header: str
    authorization_id: str
    username: str
    nonce: str
    extensions: Mapping[str, str]
    bare: str

    @classmethod
    def parse(cls, message: bytes) -> ClientFirstMessage:
        what = "client-first-message"
        text = _decode(message, what)
        parts = text.split(",")
        if len(parts) < 4:
            raise ScramFormatError(f"{what}: too few attributes")
        cbind, authzid_part = parts[0], parts[1]
        if cbind.startswith("p="):
            raise ScramFormatError(f"{what}: channel binding is not supported")
        if cbind not in ("n", "y"):
            raise ScramFormatError(f"{what}: gs2 channel binding flag must be n or y")
        authzid = username_of(_attribute(authzid_part, "a", what)) if authzid_part else ""
        bare_parts = parts[2:]
        if bare_parts[0].startswith("m="):
            raise ScramFormatError(f"{what}: mandatory extension m= is not supported")
        username = username_of(_attribute(bare_parts[0], "n", what))
        nonce = _attribute(bare_parts[1], "r", what)
        if not _PRINTABLE.fullmatch(nonce):
            raise ScramFormatError(f"{what}: nonce is not printable ASCII")
        extensions = _extensions(bare_parts[2:], what)
        return cls(f"{cbind},{authzid_part},", authzid, username, nonce, extensions, ",".join(bare_parts))

    @staticmethod
    def format(username: str, nonce: str, extensions: Mapping[str, str] | None = None) -> str:
        ext = "".join(f",{k}={v}" for k, v in (extensions or {}).items())
        return f"n,,n={sasl_name(username)},r={nonce}{ext}"


@dataclass(frozen=True, slots=True)
class ServerFirstMessage:
    nonce: str
    salt: bytes
    iterations: int

    def format(self) -> str:
        return f"r={self.nonce},s={base64.b64encode(self.salt).decode()},i={self.iterations}"

    @classmethod
    def parse(cls, message: bytes) -> ServerFirstMessage:
        what = "server-first-message"
        parts = _decode(message, what).split(",")
        if len(parts) < 3:
            raise ScramFormatError(f"{what}: too few attributes")
        if parts[0].startswith("m="):
            raise ScramFormatError(f"{what}: mandatory extension m= is not supported")
        nonce = _attribute(parts[0], "r", what)
        if not _PRINTABLE.fullmatch(nonce):
            raise ScramFormatError(f"{what}: nonce is not printable ASCII")
        salt = _b64decode(_attribute(parts[1], "s", what), f"{what}: salt")
        if not salt:
            raise ScramFormatError(f"{what}: empty salt")
        iterations_text = _attribute(parts[2], "i", what)
        if not re.fullmatch(r"[0-9]{1,10}", iterations_text) or int(iterations_text) <= 0:
            raise ScramFormatError(f"{what}: invalid iterations")
        _extensions(parts[3:], what)
        return cls(nonce, salt, int(iterations_text))


@dataclass(frozen=True, slots=True)
class ClientFinalMessage:
    channel_binding: str  # base64 as received
    nonce: str
    proof: bytes
    without_proof: str

    @classmethod
    def parse(cls, message: bytes) -> ClientFinalMessage:
        what = "client-final-message"
        text = _decode(message, what)
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise ScramFormatError(f"{what}: no proof")
        parts = without_proof.split(",")
        if len(parts) < 2:
            raise ScramFormatError(f"{what}: too few attributes")
        channel_binding = _attribute(parts[0], "c", what)
        _b64decode(channel_binding, f"{what}: channel binding")
        nonce = _attribute(parts[1], "r", what)
        if not _PRINTABLE.fullmatch(nonce):
            raise ScramFormatError(f"{what}: nonce is not printable ASCII")
        _extensions(parts[2:], what)
        proof = _b64decode(proof_b64, f"{what}: proof")
        return cls(channel_binding, nonce, proof, without_proof)


class _ServerState(Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramSaslServer:
    """The broker's side of one SCRAM exchange (Kafka's ScramSaslServer).

    ``credentials(mechanism, user)`` looks the stored credential up (None:
    no such user). ``mock_secret`` keys the salts made up for unknown users,
    so that they stay the same across attempts (one per broker).
    ``nonce_source`` makes the server nonce (tests pass a fixed one)."""

    def __init__(self, mechanism: ScramMechanism, credentials: ScramCredentialLookup, *,
                 mock_secret: bytes, nonce_source: Callable[[], str] = secure_random_string,
                 reauthentication: bool = False) -> None:
        self._scram = mechanism
        self._formatter = ScramFormatter(mechanism)
        self._credentials = credentials
        self._mock_secret = mock_secret
        self._nonce_source = nonce_source
        self._reauthentication = reauthentication
        self._state = _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE
        self._authorization_id = ""
        self._client_first: ClientFirstMessage | None = None
        self._server_first: ServerFirstMessage | None = None
        self._credential: ScramCredential | None = None
        self._deferred_failure: str | None = None

    @property
    def mechanism(self) -> str:
        return self._scram.mechanism_name

    @property
    def complete(self) -> bool:
        return self._state is _ServerState.COMPLETE

    @property
    def authorization_id(self) -> str:
        return self._authorization_id if self.complete else ""

    @property
    def credential_expiration_ms(self) -> int | None:
        return None

    @property
    def session_lifetime_ms(self) -> int | None:
        return None

    def evaluate_response(self, response: bytes) -> bytes:
        try:
            if self._state is _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE:
                challenge = self._client_first_message(response)
                self._state = _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE
                return challenge
            if self._state is _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE:
                challenge = self._client_final_message(response)
                self._state = _ServerState.COMPLETE
                return challenge
        except SaslAuthenticationError:
            self._fail()
            raise
        except ScramFormatError as e:
            self._fail()
            raise self._invalid(f"Invalid SCRAM message: {e}") from None
        raise IllegalSaslStateError(f"Unexpected SASL token in {self.mechanism} server state {self._state.value}")

    def _fail(self) -> None:
        self._state = _ServerState.FAILED
        self._credential = None

    def _invalid(self, reason: str) -> SaslAuthenticationError:
        return SaslAuthenticationError(invalid_credentials_message(self.mechanism, self._reauthentication),
                                       reason=reason)

    def _client_first_message(self, response: bytes) -> bytes:
        first = ClientFirstMessage.parse(response)
        if first.authorization_id and first.authorization_id != first.username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        if first.extensions.get(TOKENAUTH_EXTENSION, "").lower() == "true":
            raise self._invalid("Token Authentication failed: delegation tokens are not supported")
        credential = None
        try:
            credential = self._credentials(self.mechanism, first.username)
        except Exception as e:  # the store's failure fails this exchange only
            self._deferred_failure = f"Authentication failed: Credentials could not be obtained ({type(e).__name__})"
        else:
            if credential is None:
                self._deferred_failure = "Authentication failed: Invalid user credentials"
            elif credential.iterations < self._scram.min_iterations:
                self._deferred_failure = (f"Iterations {credential.iterations} is less than the minimum "
                                          f"{self._scram.min_iterations} for {self.mechanism}")
            elif len(credential.stored_key) != self._scram.digest_size or len(credential.server_key) != self._scram.digest_size:
                self._deferred_failure = f"Stored credential keys do not have the {self.mechanism} digest size"
        if self._deferred_failure is not None:
            credential = self._mock_credential(first.username)
        assert credential is not None
        server_nonce = self._nonce_source()
        if not _PRINTABLE.fullmatch(server_nonce):
            raise ValueError("server nonce must be printable ASCII without ','")
        self._client_first = first
        self._credential = credential
        self._authorization_id = first.username
        self._server_first = ServerFirstMessage(first.nonce + server_nonce, credential.salt, credential.iterations)
        return self._server_first.format().encode("utf-8")

    def _mock_credential(self, username: str) -> ScramCredential:
        """A made-up credential, the same for the same name on this broker,
        that no proof matches (RFC 5802 §9's advice against user probing)."""
        digest = self._formatter.hmac(self._mock_secret, f"{self.mechanism}\x00{username}".encode())
        n = int.from_bytes(digest[:17], "big") >> 6  # 130 bits, as a real salt
        salt = _base36(n).encode("ascii")
        unmatchable = self._formatter.hmac(self._mock_secret, digest)[: self._scram.digest_size]
        return ScramCredential(salt, unmatchable, unmatchable, DEFAULT_ITERATIONS)

    def _client_final_message(self, response: bytes) -> bytes:
        first, server_first, credential = self._client_first, self._server_first, self._credential
        assert first is not None and server_first is not None and credential is not None
        final = ClientFinalMessage.parse(response)
        if final.nonce != server_first.nonce and final.nonce != first.nonce + server_first.nonce:
            raise self._invalid("Invalid client nonce in the final client message.")
        if _b64decode(final.channel_binding, "channel binding") != first.gs2_header.encode("utf-8"):
            raise self._invalid("Channel binding does not match the gs2 header of the client-first-message")
        if len(final.proof) != self._scram.digest_size:
            raise self._invalid("Invalid client credentials (proof length)")
        auth_message = f"{first.bare},{server_first.format()},{final.without_proof}".encode()
        computed = self._formatter.stored_key_from_proof(final.proof, credential.stored_key, auth_message)
        matches = hmac.compare_digest(computed, credential.stored_key)
        if self._deferred_failure is not None:
            raise self._invalid(self._deferred_failure)
        if not matches:
            raise self._invalid("Invalid client credentials")
        signature = self._formatter.server_signature(credential.server_key, auth_message)
        self._credential = None
        return b"v=" + base64.b64encode(signature)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    while True:
        n, r = divmod(n, 36)
        out.append(digits[r])
        if n == 0:
            return "".join(reversed(out))


class _ClientState(Enum):
    SEND_CLIENT_FIRST_MESSAGE = "SEND_CLIENT_FIRST_MESSAGE"
    RECEIVE_SERVER_FIRST_MESSAGE = "RECEIVE_SERVER_FIRST_MESSAGE"
    RECEIVE_SERVER_FINAL_MESSAGE = "RECEIVE_SERVER_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramSaslClient:
    """A client's side of one SCRAM exchange (Kafka's ScramSaslClient):
    refuses a server nonce that does not extend its own, fewer than 4096 or
    more than ``max_iterations`` iterations, and a server signature that
    does not match. ``nonce`` is for tests (RFC test vectors)."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str, *,
                 nonce: str | None = None, extensions: Mapping[str, str] | None = None,
                 max_iterations: int = DEFAULT_CLIENT_MAX_ITERATIONS) -> None:
        if not username:
            raise ValueError(f"{mechanism.mechanism_name} needs a user name")
        if not password:
            raise ValueError(f"{mechanism.mechanism_name} needs a password")
        self._scram = mechanism
        self._formatter = ScramFormatter(mechanism)
        self._username = username
        self._password = password
        self._nonce = nonce if nonce is not None else secure_random_string()
        if not _PRINTABLE.fullmatch(self._nonce):
            raise ValueError("a SCRAM nonce must be printable ASCII without ','")
        for k, v in (extensions or {}).items():
            if not _ALPHA.fullmatch(k) or not v or "," in v:
                raise ValueError(f"invalid SCRAM extension {k!r}")
        self._extensions = dict(extensions or {})
        self._max_iterations = max_iterations
        self._state = _ClientState.SEND_CLIENT_FIRST_MESSAGE
        self._client_first_bare = ""
        self._server_signature = b""

    @property
    def mechanism(self) -> str:
        return self._scram.mechanism_name

    @property
    def complete(self) -> bool:
        return self._state is _ClientState.COMPLETE

    def initial_response(self) -> bytes:
        if self._state is not _ClientState.SEND_CLIENT_FIRST_MESSAGE:
            raise IllegalSaslStateError(f"Unexpected initial response in {self.mechanism} client state {self._state.value}")
        message = ClientFirstMessage.format(self._username, self._nonce, self._extensions)
        self._client_first_bare = message[3:]
        self._state = _ClientState.RECEIVE_SERVER_FIRST_MESSAGE
        return message.encode("utf-8")

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        try:
            if self._state is _ClientState.RECEIVE_SERVER_FIRST_MESSAGE:
                final = self._server_first_message(challenge)
                self._state = _ClientState.RECEIVE_SERVER_FINAL_MESSAGE
                return final
            if self._state is _ClientState.RECEIVE_SERVER_FINAL_MESSAGE:
                self._server_final_message(challenge)
                self._state = _ClientState.COMPLETE
                return None
        except SaslAuthenticationError:
            self._state = _ClientState.FAILED
            raise
        except ScramFormatError as e:
            self._state = _ClientState.FAILED
            raise SaslAuthenticationError(f"Invalid SCRAM server message with {self.mechanism}: {e}") from None
        raise IllegalSaslStateError(f"Unexpected challenge in {self.mechanism} client state {self._state.value}")

    def _server_first_message(self, challenge: bytes) -> bytes:
        first = ServerFirstMessage.parse(challenge)
        if not first.nonce.startswith(self._nonce) or len(first.nonce) == len(self._nonce):
            raise SaslAuthenticationError("Invalid server nonce: does not start with client nonce")
        if first.iterations < self._scram.min_iterations:
            raise SaslAuthenticationError(f"Requested iterations {first.iterations} is less than the minimum "
                                          f"{self._scram.min_iterations} for {self.mechanism}")
        if first.iterations > self._max_iterations:
            raise SaslAuthenticationError(f"Requested iterations {first.iterations} is more than the maximum "
                                          f"{self._max_iterations} this client computes for {self.mechanism}")
        without_proof = f"c=biws,r={first.nonce}"
        auth_message = f"{self._client_first_bare},{challenge.decode()},{without_proof}".encode()
        salted = self._formatter.salted_password(self._password, first.salt, first.iterations)
        proof = self._formatter.client_proof(salted, auth_message)
        self._server_signature = self._formatter.server_signature(self._formatter.server_key(salted), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _server_final_message(self, challenge: bytes) -> None:
        text = _decode(challenge, "server-final-message")
        parts = text.split(",")
        if parts[0].startswith("e="):
            raise SaslAuthenticationError(f"Sasl authentication using {self.mechanism} failed with error: "
                                          f"{parts[0][2:][:200]}")
        signature = _b64decode(_attribute(parts[0], "v", "server-final-message"), "server signature")
        _extensions(parts[1:], "server-final-message")
        if not hmac.compare_digest(signature, self._server_signature):
            raise SaslAuthenticationError("Invalid server signature in server final message")
