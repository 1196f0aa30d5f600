"""SASL/PLAIN (RFC 4616), both sides, as Kafka's PlainSaslServer and
PlainServerCallbackHandler.

The one client token is ``[authzid] NUL authcid NUL passwd`` (UTF-8). The
broker knows its PLAIN users from the listener's JAAS config
(``user_<name>="<password>"`` options of PlainLoginModule); the password is
compared in constant time, and an unknown user costs the same comparison.
The authorization id must be empty or the user name (Kafka refuses
impersonation). Every failure message is Kafka's, sent to the client as is.

Not thread-safe: one object per exchange.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from kavka.security.sasl.errors import IllegalSaslStateError, SaslAuthenticationError
from kavka.security.sasl.mechanism import PLAIN


class PlainSaslServer:
    """The broker's side of one PLAIN exchange; ``users`` maps each user name
    to its password (the JAAS ``user_*`` options)."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._complete = False
        self._failed = False
        self._authorization_id = ""

    @property
    def mechanism(self) -> str:
        return PLAIN

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        return self._authorization_id

    @property
    def credential_expiration_ms(self) -> int | None:
        return None

    @property
    def session_lifetime_ms(self) -> int | None:
        return None

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete or self._failed:
            state = "COMPLETE" if self._complete else "FAILED"
            raise IllegalSaslStateError(f"Unexpected SASL token in PLAIN server state {state}")
        try:
            self._authenticate(response)
        except SaslAuthenticationError:
            self._failed = True
            raise
        self._complete = True
        return b""

    def _authenticate(self, response: bytes) -> None:
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        tokens = text.split("\x00", 3)
        if len(tokens) != 3:
            raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(tokens), 4)}")
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # compare against something even for an unknown user: same cost either way
        matches = hmac.compare_digest(password.encode("utf-8"),
                                      (expected if expected is not None else "\x00" + password).encode("utf-8"))
        if expected is None or not matches:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password",
                                          reason=f"Authentication failed: Invalid username or password (user {username!r})")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        self._authorization_id = username


class PlainSaslClient:
    """A client's side of PLAIN: sends ``authzid NUL user NUL password``
    (authzid empty unless given, as Kafka's client) and expects the
    server's empty reply."""

    def __init__(self, username: str, password: str, authorization_id: str = "") -> None:
        if not username or "\x00" in username:
            raise ValueError("PLAIN needs a user name without NUL")
        if not password or "\x00" in password:
            raise ValueError("PLAIN needs a password without NUL")
        if "\x00" in authorization_id:
            raise ValueError("PLAIN authorization id must not contain NUL")
        self._message = f"{authorization_id}\x00{username}\x00{password}".encode()
        self._sent = False
        self._complete = False

    @property
    def mechanism(self) -> str:
        return PLAIN

    @property
    def complete(self) -> bool:
        return self._complete

    def initial_response(self) -> bytes:
        if self._sent:
            raise IllegalSaslStateError("PLAIN initial response already sent")
        self._sent = True
        return self._message

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if not self._sent or self._complete:
            raise IllegalSaslStateError("Unexpected challenge in PLAIN client state")
        if challenge:
            raise SaslAuthenticationError("Invalid SASL/PLAIN server reply: expected an empty challenge")
        self._complete = True
        return None
