"""Kafka's rules for topic names.

Legal: 1 to 249 of ``a-z A-Z 0-9 . _ -``, and not ``.`` or ``..`` (a name is
a directory ``<topic>-<partition>`` and a znode path segment, so nothing
may escape either). Kafka also warns that ``.`` and ``_`` collide in metric
names; that is a warning, not an error.
"""

from __future__ import annotations

import re

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(name: object) -> str | None:
    """None when ``name`` is legal, else why it is not."""
    if not isinstance(name, str) or not name:
        return "a topic name must be a non-empty string"
    if name in (".", ".."):
        return f"topic name {name!r} is not allowed"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"topic name is {len(name)} characters long; at most {MAX_TOPIC_NAME_LENGTH} are allowed"
    if not _LEGAL.match(name):
        return f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'"
    return None
