"""User and client-id names as they appear in ZooKeeper paths (Kafka's
``org.apache.kafka.common.utils.Sanitizer``).

A principal's name may hold any character (``CN=alice,O=acme``, a space, a
``/``), and so may a client id; a znode name may not. Kafka stores
``/config/users/<name>`` and ``/config/clients/<name>`` under the name
URL-encoded as Java's ``URLEncoder`` does (UTF-8; letters, digits and
``. - _`` kept), with ``*`` written ``%2A`` and a space ``%20`` rather than
``+``. Kavka writes the same bytes, so a ZooKeeper shared with Kafka's
tools reads the same entities.

``<default>`` (the default entity of KIP-55) is never sanitized: a user
literally named ``<default>`` is stored as ``%3Cdefault%3E``.

Pure functions; any thread.
"""

from __future__ import annotations

import re

DEFAULT_ENTITY = "<default>"

_KEPT = re.compile(r"[A-Za-z0-9._\-]")
_SANITIZED = re.compile(r"(?:[A-Za-z0-9._\-*+]|%[0-9A-Fa-f]{2})+")


def sanitize(name: str) -> str:
    """``name`` as a znode name: every UTF-8 byte outside ``[A-Za-z0-9._-]``
    becomes ``%XY`` (upper-case hex)."""
    out: list[str] = []
    for ch in name:
        if _KEPT.fullmatch(ch):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


def desanitize(sanitized: str) -> str:
    """The name a sanitized znode name stands for (Java's ``URLDecoder``:
    ``%XY`` decoded as UTF-8 and ``+`` read as a space). Raises ValueError
    naming the text when it is not a sanitized name: a character a
    sanitizer never writes, a ``%`` not followed by two hex digits, or bytes
    that are not UTF-8."""
    if not _SANITIZED.fullmatch(sanitized):
        raise ValueError(f"{sanitized[:100]!r} is not a sanitized entity name "
                         "(letters, digits, '.', '-', '_' and %XY escapes)")
    raw = bytearray()
    i = 0
    while i < len(sanitized):
        ch = sanitized[i]
        if ch == "%":
            raw.append(int(sanitized[i + 1:i + 3], 16))
            i += 3
            continue
        raw.extend(b" " if ch == "+" else ch.encode("ascii"))
        i += 1
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{sanitized[:100]!r} does not decode to UTF-8") from None


def is_sanitized(name: str) -> bool:
    """Could ``name`` be a znode name Kafka's sanitizer wrote (or ``<default>``)?
    ``.`` and ``..`` are never valid: ZooKeeper refuses them as path elements."""
    if name == DEFAULT_ENTITY:
        return True
    if name in (".", ".."):
        return False
    try:
        desanitize(name)
    except ValueError:
        return False
    return True
