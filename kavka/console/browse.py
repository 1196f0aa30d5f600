"""The message browser's pure parts: what the browse URL asks for
(``BrowseQuery``), where each partition starts, which records a filter
keeps, how bytes are shown (text, pretty JSON, hex), and the positions of
the next and previous pages.

A page reads each chosen partition from its start position up to ``limit``
matching records, scanning at most ``SCAN_LIMIT`` records per partition;
the next page starts where the scan stopped, the previous one ``limit``
records before where this one started (at the log start at least). Pure
functions; any thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from kavka.console import forms
from kavka.console.forms import FormError

START_MODES = ("earliest", "latest", "offset", "timestamp")
DECODINGS = ("text", "json", "hex")
MAX_LIMIT = 500
DEFAULT_LIMIT = 20
SCAN_LIMIT = 10_000  # records examined per partition and page while a filter skips them
SHOWN_BYTES = 64 * 1024  # a key or value longer than this is cut on the page
NOT_JSON = "not valid JSON; shown as text"


@dataclass(frozen=True, slots=True)
class BrowseQuery:
    partitions: tuple[int, ...]
    start: str = "earliest"
    start_value: int | None = None  # the offset or the timestamp (ms)
    positions: Mapping[int, int] | None = None  # explicit per-partition positions (paging links)
    limit: int = DEFAULT_LIMIT
    key_filter: str = ""
    value_filter: str = ""
    header_filter: str = ""  # "name" or "name=value"
    decode: str = "text"

    def matches(self, key: bytes | None, value: bytes | None, headers) -> bool:
        if self.key_filter and self.key_filter.encode("utf-8") not in (key or b""):
            return False
        if self.value_filter and self.value_filter.encode("utf-8") not in (value or b""):
            return False
        if self.header_filter:
            name, sep, want = self.header_filter.partition("=")
            for h, v in headers:
                if h == name and (not sep or (v or b"") == want.encode("utf-8")):
                    break
            else:
                return False
        return True


def parse_positions(text: str, partitions: int) -> dict[int, int]:
    """``"0:15,1:20"`` -> {0: 15, 1: 20}."""
    out: dict[int, int] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        p_s, sep, o_s = item.partition(":")
        if not sep:
            raise FormError(f"position {item[:30]!r} is not partition:offset")
        p = forms.integer(p_s, "position's partition", high=forms.INT32_MAX)
        if p >= partitions:
            raise FormError(f"position names partition {p}; the topic has {partitions}")
        out[p] = forms.integer(o_s, f"position of partition {p}")
    if not out:
        raise FormError("positions are empty")
    return out


def format_positions(positions: Mapping[int, int]) -> str:
    return ",".join(f"{p}:{o}" for p, o in sorted(positions.items()))


def parse_query(params: Mapping[str, str], partition_count: int) -> BrowseQuery:
    """The browse URL's parameters -> a checked query (FormError names the
    parameter that is wrong)."""
    def get(name: str, max_len: int = 1000) -> str:
        return forms.text(params, name, name, max_len=max_len).strip()
    partitions = forms.partition_list(get("partition") or "all", partition_count, "partition")
    start = get("start") or "earliest"
    if start not in START_MODES:
        raise FormError(f"start must be one of {', '.join(START_MODES)}, got {start[:30]!r}")
    start_value = None
    raw = get("at")
    if start == "offset":
        start_value = forms.integer(raw, "start offset") if raw else None
        if start_value is None:
            raise FormError("start at an offset needs the offset")
    elif start == "timestamp":
        if not raw:
            raise FormError("start at a timestamp needs the timestamp")
        start_value = forms.timestamp_ms(raw, "start timestamp")
    positions = parse_positions(get("pos"), partition_count) if get("pos") else None
    if positions is not None:
        partitions = tuple(sorted(positions))
    decode = get("decode") or "text"
    if decode not in DECODINGS:
        raise FormError(f"decode must be one of {', '.join(DECODINGS)}, got {decode[:30]!r}")
    limit = forms.int_field(params, "limit", "limit", low=1, high=MAX_LIMIT, default=DEFAULT_LIMIT)
    return BrowseQuery(partitions, start, start_value, positions, limit, get("key"), get("value"),
                       get("header"), decode)


def start_position(q: BrowseQuery, partition: int, log_start: int, log_end: int,
                   at_timestamp: int | None = None) -> int:
    """Where a partition's page starts: ``at_timestamp`` is ListOffsets'
    answer for a timestamp start (-1: no record that late -> the end);
    "latest" shows the last ``limit`` records."""
    if q.positions is not None:
        pos = q.positions.get(partition, log_start)
    elif q.start == "earliest":
        pos = log_start
    elif q.start == "latest":
        pos = log_end - q.limit
    elif q.start == "offset":
        pos = q.start_value if q.start_value is not None else log_start
    else:
        pos = log_end if at_timestamp is None or at_timestamp < 0 else at_timestamp
    return max(log_start, min(pos, log_end))


def previous_positions(started: Mapping[int, int], log_starts: Mapping[int, int], limit: int) -> dict[int, int] | None:
    """The page before: ``limit`` records earlier in each partition; None
    when every partition already started at its log start."""
    if all(pos <= log_starts.get(p, 0) for p, pos in started.items()):
        return None
    return {p: max(log_starts.get(p, 0), pos - limit) for p, pos in started.items()}


def decode(data: bytes | None, how: str) -> tuple[str, str | None]:
    """(what to show, a note such as "not valid JSON" or "cut") for a key
    or value."""
    if data is None:
        return "null", None
    note = None
    shown = data
    if len(data) > SHOWN_BYTES:
        shown = data[:SHOWN_BYTES]
        note = f"first {SHOWN_BYTES} of {len(data)} bytes"
    if how == "hex":
        return " ".join(shown[i:i + 16].hex(" ") for i in range(0, len(shown), 16)), note
    if how == "json" and note is None:
        try:
            return json.dumps(json.loads(data), indent=2, ensure_ascii=False, sort_keys=False), None
        except (ValueError, RecursionError):
            note = NOT_JSON
    try:
        return shown.decode("utf-8"), note
    except UnicodeDecodeError:
        return shown.hex(" "), (note + "; " if note else "") + "not UTF-8; shown as hex"
