"""SASL/OAUTHBEARER (RFC 7628) with Kafka's unsecured JWTs (KIP-255), both
sides.

The client's one message (RFC 7628 §3.1)::

    n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A...]^A

The broker validates the token as Kafka's default validator
(OAuthBearerUnsecuredValidatorCallbackHandler) does: a JWS compact
serialization whose header has ``"alg":"none"`` and no signature, with the
principal claim (``sub`` unless ``unsecuredValidatorPrincipalClaimName``), an
``exp`` in the future and an ``iat`` (if any) not in the future, both within
``unsecuredValidatorAllowableClockSkewMs``, ``exp`` after ``iat``, and every
scope of ``unsecuredValidatorRequiredScope`` (space separated) in the scope
claim (``unsecuredValidatorScopeClaimName``, default ``scope``). These
options come from the listener's OAuthBearerLoginModule JAAS entry.

A rejected token is answered as RFC 7628 §3.2.2 says: a challenge holding
the JSON error (``{"status":"invalid_token"}``, or ``insufficient_scope``
with the required scope); the client answers ``%x01`` and the server then
fails the exchange with that JSON as the message (Kafka's wording). The
session ends when the token expires (KIP-368: the credential lifetime is
``exp``).

``unsecured_login_token`` builds the client's token from the JAAS options as
Kafka's OAuthBearerUnsecuredLoginCallbackHandler does
(``unsecuredLoginStringClaim_<name>``, ``unsecuredLoginNumberClaim_<name>``,
``unsecuredLoginListClaim_<name>``, ``unsecuredLoginExtension_<name>``,
``unsecuredLoginPrincipalClaimName``, ``unsecuredLoginScopeClaimName``,
``unsecuredLoginLifetimeSeconds``).

Unsecured tokens prove nothing: anyone can mint one. They are for
development, as in Kafka.

Not thread-safe: one server or client object per exchange; the validator and
token values are immutable.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kavka.common.clock import Clock
from kavka.security.sasl.errors import IllegalSaslStateError, SaslAuthenticationError, invalid_credentials_message
from kavka.security.sasl.mechanism import OAUTHBEARER

SEPARATOR = "\x01"
AUTH_KEY = "auth"
# option names of Kafka's OAuthBearerUnsecuredValidatorCallbackHandler
PRINCIPAL_CLAIM_NAME_OPTION = "unsecuredValidatorPrincipalClaimName"
SCOPE_CLAIM_NAME_OPTION = "unsecuredValidatorScopeClaimName"
REQUIRED_SCOPE_OPTION = "unsecuredValidatorRequiredScope"
ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION = "unsecuredValidatorAllowableClockSkewMs"
# ... and of OAuthBearerUnsecuredLoginCallbackHandler
LOGIN_STRING_CLAIM_PREFIX = "unsecuredLoginStringClaim_"
LOGIN_NUMBER_CLAIM_PREFIX = "unsecuredLoginNumberClaim_"
LOGIN_LIST_CLAIM_PREFIX = "unsecuredLoginListClaim_"
LOGIN_EXTENSION_PREFIX = "unsecuredLoginExtension_"
LOGIN_PRINCIPAL_CLAIM_NAME_OPTION = "unsecuredLoginPrincipalClaimName"
LOGIN_SCOPE_CLAIM_NAME_OPTION = "unsecuredLoginScopeClaimName"
LOGIN_LIFETIME_SECONDS_OPTION = "unsecuredLoginLifetimeSeconds"
DEFAULT_PRINCIPAL_CLAIM_NAME = "sub"
DEFAULT_SCOPE_CLAIM_NAME = "scope"
DEFAULT_LIFETIME_SECONDS = 3600
_RESERVED_CLAIMS = frozenset({"iat", "exp"})

# OAuthBearerClientInitialResponse's grammar
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KVPAIRS = rf"(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+{SEPARATOR})*"
_CLIENT_INITIAL_RESPONSE = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{SEPARATOR}(?P<kvpairs>{_KVPAIRS}){SEPARATOR}")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)", re.ASCII)
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]+")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")


class OAuthBearerIllegalTokenError(ValueError):
    """A token the validator refuses; ``scope`` is set when it lacks a
    required scope (RFC 7628's insufficient_scope)."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope


class OAuthBearerConfigError(ValueError):
    """Login or validator options that cannot work (names the option)."""


@dataclass(frozen=True, slots=True)
class UnsecuredJws:
    """A parsed unsecured JWS (Kafka's OAuthBearerUnsecuredJws): its compact
    form, header and claims."""

    value: str = field(repr=False)
    header: Mapping[str, Any]
    claims: Mapping[str, Any]

    @classmethod
    def parse(cls, value: str) -> UnsecuredJws:
        if ".." in value:
            raise OAuthBearerIllegalTokenError("Malformed compact serialization contains '..'")
        splits = value.split(".")
        if len(splits) != 3:
            raise OAuthBearerIllegalTokenError(
                "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
        header = _json_object(splits[0], "header")
        claims = _json_object(splits[1], "claims")
        if "alg" not in header:
            raise OAuthBearerIllegalTokenError("JWS header must have an Algorithm value")
        if header["alg"] != "none":
            raise OAuthBearerIllegalTokenError("Unsecured JWS must have 'none' for an algorithm")
        if splits[2]:
            raise OAuthBearerIllegalTokenError("Unsecured JWS must not contain a digital signature")
        return cls(value, header, claims)

    def number_claim(self, name: str) -> float | None:
        value = self.claims.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise OAuthBearerIllegalTokenError(f"The '{name}' claim was not of type Number: {_json_type(value)}")
        if not math.isfinite(value):
            raise OAuthBearerIllegalTokenError(f"The '{name}' claim is not a finite number")
        return float(value)

    def principal_name(self, claim_name: str) -> str:
        value = self.claims.get(claim_name)
        if not isinstance(value, str) or not value:
            raise OAuthBearerIllegalTokenError(f"No principal name in JWT claim: {claim_name}")
        return value

    def scope(self, claim_name: str) -> frozenset[str]:
        value = self.claims.get(claim_name)
        if isinstance(value, str):
            return frozenset({value.strip()}) if value.strip() else frozenset()
        if isinstance(value, list):
            return frozenset(v.strip() for v in value if isinstance(v, str) and v.strip())
        return frozenset()

    def lifetime_ms(self) -> int:
        exp = self.number_claim("exp")
        if exp is None:
            raise OAuthBearerIllegalTokenError("No expiration time in JWT")
        return round(exp * 1000)


def _json_type(value: object) -> str:
    return {str: "String", bool: "Boolean", list: "List", dict: "Map"}.get(type(value), type(value).__name__)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_object(split: str, what: str) -> dict[str, Any]:
    if not _BASE64URL.fullmatch(split) or len(split.rstrip("=")) % 4 == 1:
        raise OAuthBearerIllegalTokenError(f"Invalid JWT {what}: not Base64URL")
    try:
        raw = base64.urlsafe_b64decode(split.rstrip("=") + "=" * (-len(split.rstrip("=")) % 4))
        parsed = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (binascii.Error, ValueError, RecursionError):
        raise OAuthBearerIllegalTokenError(f"Invalid JWT {what}: not a JSON object") from None
    if not isinstance(parsed, dict):
        raise OAuthBearerIllegalTokenError(f"Invalid JWT {what}: not a JSON object")
    return parsed


def _option(options: Mapping[str, str], name: str, default: str) -> str:
    value = options.get(name)
    return default if value is None or not value.strip() else value.strip()


class OAuthBearerUnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler over the JAAS
    options of the listener's OAuthBearerLoginModule entry. Raises
    OAuthBearerConfigError for a clock skew that is not a non-negative
    integer. Immutable; any thread."""

    def __init__(self, options: Mapping[str, str], clock: Clock) -> None:
        self.principal_claim_name = _option(options, PRINCIPAL_CLAIM_NAME_OPTION, DEFAULT_PRINCIPAL_CLAIM_NAME)
        self.scope_claim_name = _option(options, SCOPE_CLAIM_NAME_OPTION, DEFAULT_SCOPE_CLAIM_NAME)
        self.required_scope = tuple(options.get(REQUIRED_SCOPE_OPTION, "").split())
        skew = options.get(ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION, "").strip()
        if skew and not re.fullmatch(r"-?[0-9]{1,10}", skew):
            raise OAuthBearerConfigError(f"Invalid value for {ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION}: not an integer")
        self.allowable_clock_skew_ms = int(skew) if skew else 0
        if self.allowable_clock_skew_ms < 0 or self.allowable_clock_skew_ms > 2**31 - 1:
            raise OAuthBearerConfigError(f"Allowable clock skew millis must not be negative: {skew}")
        self._clock = clock

    def validate(self, token: str) -> UnsecuredJws:
        """The token, or OAuthBearerIllegalTokenError saying why not (in
        Kafka's checking order)."""
        jws = UnsecuredJws.parse(token)
        now = self._clock.milliseconds()
        skew = self.allowable_clock_skew_ms
        principal = jws.claims.get(self.principal_claim_name)
        if principal is None:
            raise OAuthBearerIllegalTokenError(f"Required claim missing: {self.principal_claim_name}")
        if not isinstance(principal, str):
            raise OAuthBearerIllegalTokenError(
                f"The {self.principal_claim_name} claim had the incorrect type: {_json_type(principal)}")
        iat = jws.number_claim("iat")
        if iat is not None and 1000 * iat > now + skew:
            raise OAuthBearerIllegalTokenError(
                f"The Issued At value ({iat:f} seconds) was after the indicated time ({now} ms) "
                f"plus allowable clock skew ({skew} ms)")
        exp = jws.number_claim("exp")
        if exp is None:
            raise OAuthBearerIllegalTokenError("Required claim missing: exp")
        if now - skew >= 1000 * exp:
            raise OAuthBearerIllegalTokenError(
                f"The indicated time ({now} ms) minus allowable clock skew ({skew} ms) was on or after "
                f"the Expiration Time value ({exp:f} seconds)")
        if iat is not None and exp <= iat:
            raise OAuthBearerIllegalTokenError(
                f"The Expiration Time time ({exp:f} seconds) was not after the Issued At time ({iat:f} seconds)")
        scope = jws.scope(self.scope_claim_name)
        for required in self.required_scope:
            if required not in scope:
                listed = "[" + ", ".join(self.required_scope) + "]"
                raise OAuthBearerIllegalTokenError(
                    f"The provided scope ({sorted(scope)}) was missing a required scope ({required}).  "
                    f"All required scope elements: {listed}", scope=listed)
        jws.principal_name(self.principal_claim_name)
        return jws


@dataclass(frozen=True, slots=True)
class ClientInitialResponse:
    """RFC 7628 §3.1's client message (Kafka's OAuthBearerClientInitialResponse)."""

    token: str = field(repr=False)
    authorization_id: str = ""
    extensions: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, response: bytes) -> ClientInitialResponse:
        """Raises ValueError saying what is malformed (never echoing the token)."""
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("Invalid OAUTHBEARER client first message: not UTF-8") from None
        match = _CLIENT_INITIAL_RESPONSE.fullmatch(text)
        if match is None:
            raise ValueError("Invalid OAUTHBEARER client first message")
        properties: dict[str, str] = {}
        kvpairs = match.group("kvpairs")
        for pair in kvpairs.split(SEPARATOR)[:-1]:
            key, _, value = pair.partition("=")
            properties[key] = value
        auth = properties.pop(AUTH_KEY, None)
        if auth is None:
            raise ValueError("Invalid OAUTHBEARER client first message: 'auth' not specified")
        validate_extensions(properties)
        auth_match = _AUTH.fullmatch(auth)
        if auth_match is None:
            raise ValueError("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if auth_match.group("scheme").lower() != "bearer":
            raise ValueError(f"Invalid scheme in OAUTHBEARER client first message: {auth_match.group('scheme')[:40]}")
        authzid = match.group("authzid") or ""
        return cls(auth_match.group("token"), authzid.replace("=2C", ",").replace("=3D", "="), properties)

    def to_bytes(self) -> bytes:
        authzid = "a=" + self.authorization_id.replace("=", "=3D").replace(",", "=2C") if self.authorization_id else ""
        extensions = "".join(f"{SEPARATOR}{k}={v}" for k, v in self.extensions.items())
        return f"n,{authzid},{SEPARATOR}auth=Bearer {self.token}{extensions}{SEPARATOR}{SEPARATOR}".encode()


def validate_extensions(extensions: Mapping[str, str]) -> None:
    """Kafka's OAuthBearerClientInitialResponse.validateExtensions: ``auth``
    is reserved, names are letters, values printable ASCII (or space, tab,
    CR, LF). Raises ValueError naming the extension."""
    for name, value in extensions.items():
        if name == AUTH_KEY or not _EXTENSION_KEY.fullmatch(name):
            raise ValueError(f"Extension name {name[:40]} is invalid")
        if not _EXTENSION_VALUE.fullmatch(value):
            raise ValueError(f"Extension value for extension {name} is invalid")


class OAuthBearerSaslServer:
    """The broker's side of one OAUTHBEARER exchange (Kafka's
    OAuthBearerSaslServer with the unsecured validator)."""

    def __init__(self, validator: OAuthBearerUnsecuredValidator, clock: Clock, *,
                 reauthentication: bool = False) -> None:
        self._validator = validator
        self._clock = clock
        self._reauthentication = reauthentication
        self._complete = False
        self._failed = False
        self._error_message: str | None = None
        self._authorization_id = ""
        self._expiration_ms: int | None = None
        self._session_lifetime_ms: int | None = None
        self._extensions: Mapping[str, str] = {}
        self._rejection_reason: str | None = None

    @property
    def mechanism(self) -> str:
        return OAUTHBEARER

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        return self._authorization_id

    @property
    def credential_expiration_ms(self) -> int | None:
        return self._expiration_ms

    @property
    def session_lifetime_ms(self) -> int | None:
        return self._session_lifetime_ms

    @property
    def extensions(self) -> Mapping[str, str]:
        """The SASL extensions the client sent (the unsecured validator accepts them all)."""
        return self._extensions

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete or self._failed:
            state = "COMPLETE" if self._complete else "FAILED"
            raise IllegalSaslStateError(f"Unexpected SASL token in OAUTHBEARER server state {state}")
        try:
            return self._evaluate(response)
        except SaslAuthenticationError:
            self._failed = True
            raise

    def _evaluate(self, response: bytes) -> bytes:
        if self._error_message is not None:
            # RFC 7628 §3.2.3: after an error challenge the client's only
            # valid reply is %x01, and the exchange then fails
            if response == SEPARATOR.encode():
                raise SaslAuthenticationError(self._error_message)
            raise SaslAuthenticationError(invalid_credentials_message(OAUTHBEARER, self._reauthentication),
                                          reason="OAUTHBEARER client did not answer the error challenge with %x01")
        try:
            initial = ClientInitialResponse.parse(response)
        except ValueError as e:
            raise SaslAuthenticationError(invalid_credentials_message(OAUTHBEARER, self._reauthentication),
                                          reason=str(e)) from None
        try:
            token = self._validator.validate(initial.token)
            principal = token.principal_name(self._validator.principal_claim_name)
            expiration_ms = token.lifetime_ms()
        except OAuthBearerIllegalTokenError as e:
            status = "insufficient_scope" if e.scope is not None else "invalid_token"
            error = f'{{"status":"{status}"'
            if e.scope is not None:
                error += f', "scope":"{_json_escape(e.scope)}"'
            self._error_message = error + "}"
            self._rejection_reason = str(e)
            return self._error_message.encode()
        if initial.authorization_id and initial.authorization_id != principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({initial.authorization_id[:200]}) "
                f"that is different from the token's principal name ({principal[:200]})")
        self._authorization_id = principal
        self._expiration_ms = expiration_ms
        self._session_lifetime_ms = max(0, expiration_ms - self._clock.milliseconds())
        self._extensions = dict(initial.extensions)
        self._complete = True
        return b""

    @property
    def rejection_reason(self) -> str | None:
        """Why the last token was refused (for the broker's log), None when none was."""
        return self._rejection_reason


def _json_escape(text: str) -> str:
    return json.dumps(text)[1:-1]


class OAuthBearerSaslClient:
    """A client's side of OAUTHBEARER (Kafka's OAuthBearerSaslClient): sends
    the token, answers an error challenge with %x01 (the server then fails
    the exchange with the error) and completes on the server's empty reply."""

    def __init__(self, token: str, *, extensions: Mapping[str, str] | None = None,
                 authorization_id: str = "") -> None:
        if not re.fullmatch(r"[-_.a-zA-Z0-9]+", token):
            raise ValueError("an OAUTHBEARER token must be a non-empty Base64URL JWS compact serialization")
        validate_extensions(extensions or {})
        self._initial = ClientInitialResponse(token, authorization_id, dict(extensions or {}))
        self._state = "SEND_CLIENT_FIRST_MESSAGE"
        self.server_error: str | None = None

    @property
    def mechanism(self) -> str:
        return OAUTHBEARER

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    def initial_response(self) -> bytes:
        if self._state != "SEND_CLIENT_FIRST_MESSAGE":
            raise IllegalSaslStateError(f"Unexpected initial response in OAUTHBEARER client state {self._state}")
        self._state = "RECEIVE_SERVER_FIRST_MESSAGE"
        return self._initial.to_bytes()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._state == "RECEIVE_SERVER_MESSAGE_AFTER_FAILURE":
            # the server should have failed the exchange after our %x01
            self._state = "FAILED"
            raise SaslAuthenticationError(f"OAUTHBEARER authentication failed: {self.server_error}")
        if self._state != "RECEIVE_SERVER_FIRST_MESSAGE":
            raise IllegalSaslStateError(f"Unexpected challenge in OAUTHBEARER client state {self._state}")
        if challenge:
            self.server_error = challenge[:1000].decode("utf-8", "replace")
            self._state = "RECEIVE_SERVER_MESSAGE_AFTER_FAILURE"
            return SEPARATOR.encode()
        self._state = "COMPLETE"
        return None


@dataclass(frozen=True, slots=True)
class UnsecuredLoginToken:
    """A token minted by ``unsecured_login_token``: its compact form, the
    principal it names, when it expires and the SASL extensions to send."""

    value: str = field(repr=False)
    principal_name: str
    lifetime_ms: int
    extensions: Mapping[str, str]


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def unsecured_login_token(options: Mapping[str, str], clock: Clock) -> UnsecuredLoginToken:
    """The unsecured token Kafka's OAuthBearerUnsecuredLoginCallbackHandler
    builds from the OAuthBearerLoginModule options: header
    ``{"alg":"none"}``, claims ``exp`` (now + unsecuredLoginLifetimeSeconds,
    default 3600), ``iat`` (now) and the ``unsecuredLogin*Claim_<name>``
    claims. A list claim's first character is its delimiter
    (``",a,b"`` -> ``["a","b"]``). Raises OAuthBearerConfigError naming the
    option that cannot work."""
    if not options:
        raise OAuthBearerConfigError("OAuthBearerLoginModule has no options: this login cannot make client "
                                     f"connections (give {LOGIN_STRING_CLAIM_PREFIX}sub)")
    if all(k.startswith(LOGIN_EXTENSION_PREFIX) for k in options):
        raise OAuthBearerConfigError("Extensions provided in login context without a token")
    principal_claim = _option(options, LOGIN_PRINCIPAL_CLAIM_NAME_OPTION, DEFAULT_PRINCIPAL_CLAIM_NAME)
    lifetime_text = options.get(LOGIN_LIFETIME_SECONDS_OPTION, str(DEFAULT_LIFETIME_SECONDS)).strip()
    if not re.fullmatch(r"-?[0-9]{1,18}", lifetime_text):
        raise OAuthBearerConfigError(f"{LOGIN_LIFETIME_SECONDS_OPTION} is not an integer")
    now_s = clock.milliseconds() / 1000.0
    claims: dict[str, Any] = {"exp": now_s + int(lifetime_text), "iat": now_s}
    extensions: dict[str, str] = {}
    for key, value in options.items():
        for prefix in (LOGIN_STRING_CLAIM_PREFIX, LOGIN_NUMBER_CLAIM_PREFIX, LOGIN_LIST_CLAIM_PREFIX):
            if key.startswith(prefix) and len(key) > len(prefix):
                name = key[len(prefix):]
                if name in _RESERVED_CLAIMS:
                    raise OAuthBearerConfigError(f"Cannot explicitly set the '{name}' claim")
                if prefix is LOGIN_STRING_CLAIM_PREFIX:
                    claims[name] = value
                elif prefix is LOGIN_NUMBER_CLAIM_PREFIX:
                    if not _NUMBER.fullmatch(value.strip()):
                        raise OAuthBearerConfigError(f"{key} is not a number")
                    claims[name] = float(value)
                else:
                    claims[name] = _list_claim(value)
        if key.startswith(LOGIN_EXTENSION_PREFIX) and len(key) > len(LOGIN_EXTENSION_PREFIX):
            extensions[key[len(LOGIN_EXTENSION_PREFIX):]] = value
    try:
        validate_extensions(extensions)
    except ValueError as e:
        raise OAuthBearerConfigError(str(e)) from None
    header = json.dumps({"alg": "none"}, separators=(",", ":")).encode()
    body = json.dumps(claims, separators=(",", ":")).encode()
    value = f"{_b64url(header)}.{_b64url(body)}."
    principal = claims.get(principal_claim)
    if not isinstance(principal, str) or not principal:
        raise OAuthBearerConfigError(f"No principal name in JWT claim: {principal_claim} "
                                     f"(give {LOGIN_STRING_CLAIM_PREFIX}{principal_claim})")
    return UnsecuredLoginToken(value, principal, round(claims["exp"] * 1000), extensions)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _list_claim(value: str) -> list[str]:
    """Kafka's listJsonText: the first character delimits the rest; an empty
    element (leading, trailing or doubled delimiter) is kept as ""."""
    if len(value) <= 1:
        return []
    delimiter, rest = value[0], value[1:]
    elements = rest.split(delimiter)
    # Java's String.split drops trailing empty strings; Kafka then appends one "" when any element was empty
    while elements and elements[-1] == "":
        elements.pop()
    if rest.startswith(delimiter) or rest.endswith(delimiter) or delimiter * 2 in rest:
        elements.append("")
    return elements


LIBRDKAFKA_OAUTHBEARER_CONFIG = "sasl.oauthbearer.config"


def librdkafka_unsecured_token(config: str, clock: Clock) -> UnsecuredLoginToken:
    """The unsecured token librdkafka mints from ``sasl.oauthbearer.config``
    (with ``enable.sasl.oauthbearer.unsecure.jwt=true``), so that a
    client.properties written for confluent-kafka or kcat works with Kavka's
    tools too: space-separated ``principal=<name>`` (required),
    ``principalClaimName`` (default sub), ``scope=<a,b>``, ``scopeClaimName``
    (default scope), ``lifeSeconds`` (default 3600) and
    ``extension_<name>=<value>``. Raises OAuthBearerConfigError naming the
    key; values are never quoted in messages."""
    what = f"Invalid {LIBRDKAFKA_OAUTHBEARER_CONFIG}"
    settings: dict[str, str] = {}
    extensions: dict[str, str] = {}
    for item in config.split():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise OAuthBearerConfigError(f"{what}: expected key=value, found an element without '='")
        if key.startswith("extension_") and len(key) > len("extension_"):
            name = key[len("extension_"):]
            if name in extensions:
                raise OAuthBearerConfigError(f"{what}: {key} cannot be specified multiple times")
            extensions[name] = value
            continue
        if key not in ("principal", "principalClaimName", "scope", "scopeClaimName", "lifeSeconds"):
            raise OAuthBearerConfigError(f"{what}: unrecognized key {key[:40]!r} (expected principal, "
                                         "principalClaimName, scope, scopeClaimName, lifeSeconds, extension_<name>)")
        if key in settings:
            raise OAuthBearerConfigError(f"{what}: {key} cannot be specified multiple times")
        if not value:
            raise OAuthBearerConfigError(f"{what}: {key} has an empty value")
        settings[key] = value
    principal = settings.get("principal")
    if principal is None:
        raise OAuthBearerConfigError(f"{what}: principal=<value> is required")
    life = settings.get("lifeSeconds", str(DEFAULT_LIFETIME_SECONDS))
    if not re.fullmatch(r"[0-9]{1,9}", life) or int(life) <= 0:
        raise OAuthBearerConfigError(f"{what}: lifeSeconds must be a positive integer")
    try:
        validate_extensions(extensions)
    except ValueError as e:
        raise OAuthBearerConfigError(f"{what}: {e}") from None
    now_s = clock.milliseconds() // 1000
    claims: dict[str, Any] = {settings.get("principalClaimName", DEFAULT_PRINCIPAL_CLAIM_NAME): principal,
                              "iat": now_s, "exp": now_s + int(life)}
    if "scope" in settings:
        claims[settings.get("scopeClaimName", DEFAULT_SCOPE_CLAIM_NAME)] = [
            s for s in settings["scope"].split(",") if s]
    header = json.dumps({"alg": "none"}, separators=(",", ":")).encode()
    body = json.dumps(claims, separators=(",", ":")).encode()
    return UnsecuredLoginToken(f"{_b64url(header)}.{_b64url(body)}.", principal, claims["exp"] * 1000, extensions)
