"""Typed configuration definitions with Kafka's key names.

A ``ConfigDef`` lists keys (name, type, default, validator, doc). ``parse``
turns a mapping of raw values (strings from ``server.properties``, topic
overrides from ZooKeeper, or typed Python values) into a dict of typed
values, raising ``ConfigError`` that names the key, the bad value and what
is allowed. Both the broker config (``log.*``, ``broker.id`` ...) and the
topic-level log config (``segment.bytes`` ...) are defined with it.

Pure values and functions; any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class ConfigError(ValueError):
    """A configuration value is missing, unknown or invalid. The message
    names the key, the value given and the values allowed."""

    def __init__(self, key: str, message: str, source: str = "") -> None:
        self.key = key
        where = f" in {source}" if source else ""
        super().__init__(f"config {key!r}{where}: {message}")


class Password:
    """A secret config value (Kafka's ``Password`` type): ``str()`` and
    ``repr()`` say ``[hidden]`` so that a password never reaches a log line,
    an exception or a DescribeConfigs answer by accident; ``value`` is the
    secret, read only where it is used (a keystore, a JAAS login module)."""

    __slots__ = ("value",)
    HIDDEN = "[hidden]"

    def __init__(self, value: str) -> None:
        self.value = value

    def __str__(self) -> str:
        return self.HIDDEN

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


class ConfigType(Enum):
    INT = "int"  # 32-bit
    LONG = "long"  # 64-bit
    DOUBLE = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    LIST = "list"  # comma-separated strings
    PASSWORD = "password"  # a string held as ``Password``


_INT_BOUNDS = {ConfigType.INT: (-(2**31), 2**31 - 1), ConfigType.LONG: (-(2**63), 2**63 - 1)}


class _NoDefault:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()

Validator = Callable[[str, Any], None]


@dataclass(frozen=True, slots=True)
class Range:
    """Numbers in [lo, hi]; either bound may be None."""

    lo: float | None = None
    hi: float | None = None

    def __call__(self, key: str, value: Any) -> None:
        if value is None:
            return
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            lo = "-inf" if self.lo is None else self.lo
            hi = "+inf" if self.hi is None else self.hi
            raise ConfigError(key, f"value {value} is out of range; allowed: [{lo}, {hi}]")


@dataclass(frozen=True, slots=True)
class OneOf:
    """A string (or each element of a list) drawn from a fixed set."""

    allowed: tuple[str, ...]
    case_sensitive: bool = False

    def __call__(self, key: str, value: Any) -> None:
        if value is None:
            return
        items = value if isinstance(value, list) else [value]
        norm = (lambda s: s) if self.case_sensitive else (lambda s: s.lower())
        ok = {norm(a) for a in self.allowed}
        for item in items:
            if norm(item) not in ok:
                raise ConfigError(key, f"value {item!r} is not allowed; allowed values: {', '.join(self.allowed)}")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    nullable: bool = False


def _coerce(key: ConfigKey, raw: Any, source: str) -> Any:
    t = key.type
    if raw is None:
        if key.nullable:
            return None
        raise ConfigError(key.name, "a value is required (null given)", source)
    try:
        if t in (ConfigType.INT, ConfigType.LONG):
            if isinstance(raw, bool):
                raise ValueError
            value = int(raw.strip()) if isinstance(raw, str) else int(raw)
            if isinstance(raw, float) and raw != value:
                raise ValueError
            lo, hi = _INT_BOUNDS[t]
            if not lo <= value <= hi:
                raise ConfigError(key.name, f"value {value} does not fit a {t.value}", source)
            return value
        if t is ConfigType.DOUBLE:
            return float(raw.strip()) if isinstance(raw, str) else float(raw)
        if t is ConfigType.BOOLEAN:
            if isinstance(raw, bool):
                return raw
            s = str(raw).strip().lower()
            if s in ("true", "false"):
                return s == "true"
            raise ValueError
        if t is ConfigType.LIST:
            if isinstance(raw, (list, tuple)):
                return [str(x).strip() for x in raw]
            s = str(raw).strip()
            return [p.strip() for p in s.split(",") if p.strip()] if s else []
        if t is ConfigType.PASSWORD:
            return raw if isinstance(raw, Password) else Password(str(raw).strip() if isinstance(raw, str) else str(raw))
        return str(raw).strip() if isinstance(raw, str) else str(raw)
    except ConfigError:
        raise
    except (ValueError, TypeError):
        raise ConfigError(key.name, f"value {raw!r} is not a valid {t.value}", source) from None


@dataclass
class ConfigDef:
    """An ordered set of ``ConfigKey``s."""

    keys: dict[str, ConfigKey] = field(default_factory=dict)

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        doc: str = "",
        validator: Validator | None = None,
        nullable: bool = False,
    ) -> ConfigDef:
        if name in self.keys:
            raise ValueError(f"config key {name} defined twice")
        self.keys[name] = ConfigKey(name, type, default, doc, validator, nullable)
        return self

    def extend(self, other: ConfigDef) -> ConfigDef:
        for key in other.keys.values():
            if key.name in self.keys:
                raise ValueError(f"config key {key.name} defined twice")
            self.keys[key.name] = key
        return self

    def __contains__(self, name: str) -> bool:
        return name in self.keys

    def names(self) -> Iterable[str]:
        return self.keys.keys()

    def parse_value(self, name: str, raw: Any, source: str = "") -> Any:
        key = self.keys.get(name)
        if key is None:
            raise ConfigError(name, "unknown configuration key", source)
        value = _coerce(key, raw, source)
        if key.validator is not None:
            try:
                key.validator(name, value)
            except ConfigError as e:
                if source and source not in str(e):
                    raise ConfigError(name, str(e).split(": ", 1)[1], source) from None
                raise
        return value

    def parse(
        self,
        props: Mapping[str, Any],
        *,
        allow_unknown: bool = False,
        source: str = "",
    ) -> dict[str, Any]:
        """Typed values for every key: given values parsed and validated,
        defaults for the rest. A key without default that is not given, an
        unknown key (unless ``allow_unknown``), or a bad value raise
        ``ConfigError``."""
        out: dict[str, Any] = {}
        for name, raw in props.items():
            if name not in self.keys:
                if allow_unknown:
                    continue
                raise ConfigError(name, "unknown configuration key", source)
            out[name] = self.parse_value(name, raw, source)
        for name, key in self.keys.items():
            if name in out:
                continue
            if key.default is NO_DEFAULT:
                raise ConfigError(name, "is required but was not given", source)
            out[name] = key.default
        return out


def load_properties(text: str, source: str = "") -> dict[str, str]:
    """Parse Java-properties text: ``key=value``, ``key: value`` or ``key value``
    (the key ends at the first ``=``, ``:`` or whitespace, as in
    ``java.util.Properties``), ``#``/``!`` comments, trailing-backslash
    continuation (a JAAS config over several lines). Raises ``ConfigError``
    on a line that is a key alone, naming the line number and never the
    line's text: it may be a secret that lost its key."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        lineno = i + 1
        i += 1
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + lines[i].strip()
            i += 1
        sep_pos = next((pos for pos, ch in enumerate(line) if ch in "=:" or ch.isspace()), None)
        if sep_pos is None:
            raise ConfigError("(no key)", f"line {lineno} has no '=' (expected key=value)", source)
        key, value = line[:sep_pos].strip(), line[sep_pos:].lstrip()
        if value[:1] in ("=", ":"):
            value = value[1:]
        value = value.strip()
        if not key:
            raise ConfigError("(no key)", f"line {lineno} has an empty key", source)
        out[key] = value
    return out
