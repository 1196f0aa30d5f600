"""Kafka's ``sasl.jaas.config`` values (org.apache.kafka.common.security.JaasConfig).

A value is one or more login module entries::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

each a login module class name, a control flag (required, requisite,
sufficient, optional; any case) and ``key=value`` options, ended by ``;``.
Tokens follow java.io.StreamTokenizer as Kafka configures it: values are
words (letters, digits, ``.``, ``-``, ``_``, ``$``, non-ASCII, not starting
with a digit, ``.`` or ``-``) or quoted with ``"`` or ``'``, where ``\\n``,
``\\t``, ``\\"``, ``\\\\``, octal ``\\ooo`` and the like are escapes; ``//`` and
``/* */`` are comments, and so is a lone ``/`` to the end of the line.
Kavka refuses what StreamTokenizer would let through silently: a quoted
value cut by a line end or the end of the text, an option given twice.

The broker reads ``listener.name.<listener>.<mechanism>.sasl.jaas.config``
(mechanism in lower case), falling back to ``sasl.jaas.config``; a value
must hold exactly one login module there (Kafka's JaasContext). PLAIN users
are the ``user_<name>`` options of PlainLoginModule; ``username`` and
``password`` are the broker's (or client's) own credentials.

The text is a secret: error messages name the config key and option but
never quote a value, and an entry's repr masks options whose name contains
``password`` or starts with ``user_``.

Pure functions and values; any thread.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from kavka.security.sasl.mechanism import OAUTHBEARER, PLAIN, SCRAM_SHA_256, SCRAM_SHA_512

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
LOGIN_MODULE_FOR_MECHANISM: Mapping[str, str] = {
    PLAIN: PLAIN_LOGIN_MODULE,
    SCRAM_SHA_256: SCRAM_LOGIN_MODULE,
    SCRAM_SHA_512: SCRAM_LOGIN_MODULE,
    OAUTHBEARER: OAUTHBEARER_LOGIN_MODULE,
}
SASL_JAAS_CONFIG = "sasl.jaas.config"
USER_PREFIX = "user_"
MASK = "[hidden]"


class JaasConfigError(ValueError):
    """A ``sasl.jaas.config`` value that does not parse or does not fit its
    use; the message names the config key, never a value."""


class LoginModuleControlFlag(Enum):
    REQUIRED = "required"
    REQUISITE = "requisite"
    SUFFICIENT = "sufficient"
    OPTIONAL = "optional"


def is_sensitive_option(key: str) -> bool:
    """Options whose values are secrets: passwords and PLAIN users' passwords."""
    return "password" in key.lower() or key.startswith(USER_PREFIX)


@dataclass(frozen=True, slots=True)
class JaasConfigEntry:
    """One login module entry. ``options`` keep the order they were given in."""

    login_module: str
    control_flag: LoginModuleControlFlag
    options: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        shown = {k: (MASK if is_sensitive_option(k) else v) for k, v in self.options.items()}
        return f"JaasConfigEntry({self.login_module} {self.control_flag.value} {shown})"

    __str__ = __repr__

    def plain_users(self) -> dict[str, str]:
        """PlainLoginModule's ``user_<name>="<password>"`` options as name -> password."""
        return {k[len(USER_PREFIX):]: v for k, v in self.options.items()
                if k.startswith(USER_PREFIX) and len(k) > len(USER_PREFIX)}


# java.io.StreamTokenizer's token kinds as Kafka uses them
_WORD = "word"
_QUOTED = "quoted"
_NUMBER = "number"
_ORDINARY = "ordinary"
_EOF = "eof"


def _is_word_start(c: str) -> bool:
    return c.isascii() and c.isalpha() or c in "_$" or ord(c) >= 0xA0


def _is_word_part(c: str) -> bool:
    return _is_word_start(c) or c.isascii() and c.isdigit() or c in ".-"


_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}


class _Tokenizer:
    def __init__(self, text: str, where: str) -> None:
        self._text = text
        self._pos = 0
        self._where = where

    def error(self, message: str) -> JaasConfigError:
        return JaasConfigError(f"{self._where}: {message}")

    def next(self) -> tuple[str, str | None]:
        """(kind, text): text is the word or unquoted string, or for an
        ordinary character the character itself; None for numbers."""
        text, n = self._text, len(self._text)
        while self._pos < n:
            c = text[self._pos]
            if c <= " ":
                self._pos += 1
            elif c == "/":
                if text.startswith("/*", self._pos):
                    end = text.find("*/", self._pos + 2)
                    self._pos = n if end < 0 else end + 2
                else:  # "//" and a lone "/" (StreamTokenizer's comment char) run to the end of the line
                    while self._pos < n and text[self._pos] not in "\r\n":
                        self._pos += 1
            else:
                break
        if self._pos >= n:
            return _EOF, None
        c = text[self._pos]
        if c.isascii() and c.isdigit() or c in ".-":
            self._pos += 1
            while self._pos < n and (text[self._pos].isascii() and text[self._pos].isdigit() or text[self._pos] == "."):
                self._pos += 1
            return _NUMBER, None
        if _is_word_start(c):
            start = self._pos
            while self._pos < n and _is_word_part(text[self._pos]):
                self._pos += 1
            return _WORD, text[start:self._pos]
        if c in "\"'":
            return _QUOTED, self._quoted(c)
        self._pos += 1
        return _ORDINARY, c

    def _quoted(self, quote: str) -> str:
        text, n = self._text, len(self._text)
        self._pos += 1
        out: list[str] = []
        while True:
            if self._pos >= n or text[self._pos] in "\r\n":
                raise self.error("quoted value not closed before the end of the line")
            c = text[self._pos]
            self._pos += 1
            if c == quote:
                return "".join(out)
            if c != "\\":
                out.append(c)
                continue
            if self._pos >= n:
                raise self.error("quoted value not closed before the end of the line")
            e = text[self._pos]
            self._pos += 1
            if "0" <= e <= "7":
                digits = e
                limit = 3 if e <= "3" else 2
                while len(digits) < limit and self._pos < n and "0" <= text[self._pos] <= "7":
                    digits += text[self._pos]
                    self._pos += 1
                out.append(chr(int(digits, 8)))
            else:
                out.append(_ESCAPES.get(e, e))


def parse_jaas_config(text: str, config_key: str = SASL_JAAS_CONFIG) -> list[JaasConfigEntry]:
    """The login module entries of a JAAS config value (at least one).
    Raises JaasConfigError naming ``config_key`` (and the option, where one
    is at fault) with Kafka's wording."""
    tokens = _Tokenizer(text, f"Invalid {config_key}")
    entries: list[JaasConfigEntry] = []
    while True:
        kind, module = tokens.next()
        if kind == _EOF:
            break
        if kind not in (_WORD, _QUOTED) or not module:
            raise tokens.error("expected a login module class name")
        kind, flag = tokens.next()
        if kind == _EOF:
            raise tokens.error("Login module control flag not specified in JAAS config")
        control_flag = None
        if kind == _WORD and flag is not None:
            control_flag = next((f for f in LoginModuleControlFlag if f.value == flag.lower()), None)
        if control_flag is None:
            shown = f" '{flag}'" if kind == _WORD else ""
            raise tokens.error(f"Invalid login module control flag{shown} in JAAS config "
                               "(expected required, requisite, sufficient or optional)")
        options: dict[str, str] = {}
        while True:
            # a token is named in a message only once it is known to be an
            # option name (followed by '='): a stray token may be part of a password
            after = f"option '{next(reversed(options))}'" if options else f"the control flag of {_shown(module)}"
            kind, key = tokens.next()
            if kind == _EOF:
                raise tokens.error("JAAS config entry not terminated by semi-colon")
            if kind == _ORDINARY and key == ";":
                break
            if kind not in (_WORD, _QUOTED) or not key:
                raise tokens.error(f"expected an option name or ';' after {after}")
            kind, eq = tokens.next()
            if kind != _ORDINARY or eq != "=":
                raise tokens.error(f"Value not specified for key (the option after {after}) in JAAS config")
            kind, value = tokens.next()
            if kind not in (_WORD, _QUOTED) or value is None:
                raise tokens.error(f"Value not specified for key '{key}' in JAAS config")
            if key in options:
                raise tokens.error(f"option '{key}' given more than once in JAAS config")
            options[key] = value
        entries.append(JaasConfigEntry(module, control_flag, options))
    if not entries:
        raise tokens.error("Login module not specified in JAAS config")
    return entries


_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")


def _shown(module: str) -> str:
    """A login module name for a message, unless it does not look like a
    package-qualified class name (then it may be a misplaced secret)."""
    return module if _CLASS_NAME.fullmatch(module) and len(module) <= 200 else "the login module"


def jaas_config_key(listener: str | None, mechanism: str) -> str:
    """``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (both lower
    case, as Kafka's ListenerName.saslMechanismConfigPrefix), or
    ``sasl.jaas.config`` without a listener."""
    if listener is None:
        return SASL_JAAS_CONFIG
    return f"listener.name.{listener.lower()}.{mechanism.lower()}.{SASL_JAAS_CONFIG}"


def load_jaas_entry(text: str, mechanism: str, config_key: str = SASL_JAAS_CONFIG) -> JaasConfigEntry:
    """The one entry a mechanism's JAAS config must hold (Kafka's
    JaasContext: "should be 1 module"), checked to name the login module of
    ``mechanism``."""
    entries = parse_jaas_config(text, config_key)
    if len(entries) != 1:
        raise JaasConfigError(f"Invalid {config_key}: JAAS config property contains {len(entries)} login modules, "
                              "should be 1 module")
    entry = entries[0]
    expected = LOGIN_MODULE_FOR_MECHANISM.get(mechanism)
    if expected is None:
        raise JaasConfigError(f"Invalid {config_key}: SASL mechanism {mechanism} is not supported")
    if entry.login_module != expected:
        raise JaasConfigError(f"Invalid {config_key}: login module {_shown(entry.login_module)} does not serve "
                              f"SASL mechanism {mechanism} (expected {expected})")
    return entry


def login_credentials(entry: JaasConfigEntry, config_key: str = SASL_JAAS_CONFIG) -> tuple[str, str]:
    """The ``username`` and ``password`` options a PLAIN or SCRAM login
    authenticates with (e.g. the broker's inter-broker credentials)."""
    username = entry.options.get("username")
    password = entry.options.get("password")
    if not username:
        raise JaasConfigError(f"Invalid {config_key}: option 'username' is missing or empty")
    if not password:
        raise JaasConfigError(f"Invalid {config_key}: option 'password' is missing or empty")
    return username, password
