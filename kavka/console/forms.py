"""Checking what a console form or URL carries, before anything reaches the
cluster. Every value is hostile: each parser bounds the input's size,
accepts only what Kafka would, and raises ``FormError`` with a message that
names the field and says what was wrong; nothing is sent when one fails.
Pure functions; any thread.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

MAX_TOPIC_NAME = 249  # Kafka's Topic.MAX_NAME_LENGTH
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")
MAX_FIELD = 1 << 20  # no form field may be larger than 1 MiB (a record value included)
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1


class FormError(ValueError):
    """A form field or URL parameter is not acceptable; the message says
    which and why."""


def text(form: Mapping[str, str], name: str, label: str, *, required: bool = False,
         max_len: int = MAX_FIELD) -> str:
    value = form.get(name, "")
    if not isinstance(value, str):
        raise FormError(f"{label} must be text, not a file upload")
    if len(value) > max_len:
        raise FormError(f"{label} is {len(value)} characters long; at most {max_len} are accepted")
    if required and not value.strip():
        raise FormError(f"{label} is required")
    return value


def topic_name(value: str, label: str = "topic name") -> str:
    """A legal Kafka topic name (Topic.validate: 1-249 of [a-zA-Z0-9._-],
    not "." or "..")."""
    if not value:
        raise FormError(f"the {label} is empty")
    if len(value) > MAX_TOPIC_NAME:
        raise FormError(f"the {label} is {len(value)} characters long; Kafka allows at most {MAX_TOPIC_NAME}")
    if value in (".", ".."):
        raise FormError(f"the {label} cannot be '.' or '..'")
    if not _TOPIC_CHARS.fullmatch(value):
        raise FormError(f"the {label} {value!r} has characters Kafka does not allow "
                        "(only ASCII letters, digits, '.', '_' and '-')")
    return value


def integer(value: str, label: str, *, low: int = 0, high: int = INT64_MAX) -> int:
    s = value.strip()
    if not re.fullmatch(r"-?[0-9]{1,19}", s):
        raise FormError(f"{label} must be a whole number, got {value[:40]!r}")
    n = int(s)
    if not low <= n <= high:
        raise FormError(f"{label} must be between {low} and {high}, got {n}")
    return n


def int_field(form: Mapping[str, str], name: str, label: str, *, low: int = 0, high: int = INT64_MAX,
              default: int | None = None) -> int:
    raw = text(form, name, label, max_len=40)
    if not raw.strip():
        if default is None:
            raise FormError(f"{label} is required")
        return default
    return integer(raw, label, low=low, high=high)


def key_values(value: str, label: str, *, max_items: int = 1000) -> dict[str, str]:
    """``key=value`` per line (blank lines skipped) -> a dict; a key given
    twice or a line without '=' is refused."""
    out: dict[str, str] = {}
    for n, line in enumerate(value.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, val = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise FormError(f"{label}, line {n}: {line[:60]!r} is not key=value")
        if key in out:
            raise FormError(f"{label}, line {n}: {key} is given twice")
        out[key] = val.strip()
        if len(out) > max_items:
            raise FormError(f"{label}: more than {max_items} entries")
    return out


def headers(value: str) -> tuple[tuple[str, bytes], ...]:
    """Record headers, ``name=value`` per line; a name may repeat (Kafka
    headers are a list)."""
    out: list[tuple[str, bytes]] = []
    for n, line in enumerate(value.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, val = line.partition("=")
        if not sep or not key.strip():
            raise FormError(f"headers, line {n}: {line[:60]!r} is not name=value")
        out.append((key.strip(), val.encode("utf-8")))
        if len(out) > 1000:
            raise FormError("headers: more than 1000 of them")
    return tuple(out)


def broker_ids(value: str, label: str = "brokers") -> tuple[int, ...]:
    """``"1,2,3"`` (or space separated) -> distinct broker ids in order."""
    items = [s for s in re.split(r"[\s,]+", value.strip()) if s]
    if not items:
        raise FormError(f"{label}: give broker ids, e.g. 0,1,2")
    out: list[int] = []
    for s in items:
        b = integer(s, f"{label} entry {s[:20]!r}", high=INT32_MAX)
        if b in out:
            raise FormError(f"{label} names broker {b} twice")
        out.append(b)
    return tuple(out)


def partition_list(value: str, count: int, label: str = "partitions") -> tuple[int, ...]:
    """``"all"``/empty -> every partition; else ``"0,2,5-7"`` within
    0..count-1."""
    s = value.strip()
    if s in ("", "all"):
        return tuple(range(count))
    out: list[int] = []
    for item in re.split(r"[\s,]+", s):
        if not item:
            continue
        lo_s, dash, hi_s = item.partition("-")
        lo = integer(lo_s, f"{label} entry {item[:20]!r}", high=INT32_MAX)
        hi = integer(hi_s, f"{label} entry {item[:20]!r}", high=INT32_MAX) if dash else lo
        if hi < lo or hi - lo > 100_000:
            raise FormError(f"{label} entry {item[:20]!r} is not a range low-high")
        for p in range(lo, hi + 1):
            if p >= count:
                raise FormError(f"{label}: partition {p} does not exist (the topic has {count})")
            if p not in out:
                out.append(p)
    if not out:
        raise FormError(f"{label}: none given")
    return tuple(out)


def timestamp_ms(value: str, label: str = "timestamp") -> int:
    """Milliseconds since the epoch, or an ISO 8601 date and time (UTC
    when it names no zone), e.g. 2026-11-26T23:00:00."""
    s = value.strip()
    if re.fullmatch(r"[0-9]{1,16}", s):
        return int(s)
    if not s or len(s) > 40:
        raise FormError(f"{label} must be milliseconds since 1970 or a date like 2026-11-26T23:00:00, "
                        f"got {value[:40]!r}")
    try:
        when = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise FormError(f"{label} {value[:40]!r} is neither milliseconds since 1970 nor an ISO date "
                        "like 2026-11-26T23:00:00") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    ms = int(when.timestamp() * 1000)
    if ms < 0:
        raise FormError(f"{label} {value[:40]!r} is before 1970")
    return ms


def format_ms(ms: int) -> str:
    """A record timestamp for people: UTC, to the millisecond."""
    if ms < 0:
        return "none"
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


def format_bytes(n: int | None) -> str:
    if n is None or n < 0:
        return "?"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
