"""Regular expressions sent by clients, compiled by RE2 as Kafka compiles
them with RE2/J: KIP-848's subscribed topic regex and KIP-1152's
ListTransactions transactional id pattern. Matching takes time linear in
the subject, so a pattern from any client (``(a+)+$``) cannot stall the
broker's event loop as Python's backtracking ``re`` would. Kafka matches
the whole name (RE2/J's ``matches()``): callers use ``fullmatch``.
"""

from __future__ import annotations

from typing import Any

import re2

__all__ = ["RegexError", "compile_linear"]

RegexError = re2.error

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a bad pattern is answered INVALID_REGULAR_EXPRESSION, not logged by RE2


def compile_linear(pattern: str) -> Any:
    """The compiled pattern; ``RegexError`` saying why if it is not valid."""
    return re2.compile(pattern, options=_OPTIONS)
