"""Pure text functions of the console tools: how ``kavka console-producer``
turns a line into a record and how ``kavka console-consumer`` turns a
record into a line, with the ``--property`` names of Kafka's console tools.

Producer line (``LineParser``): with ``parse.headers=true`` the line starts
with headers ``k1:v1,k2:v2`` ended by ``headers.delimiter``; with
``parse.key=true`` the key comes next, ended by ``key.separator``; the rest
is the value. A line without a required delimiter is an error
(``LineError`` naming the line), unless ``ignore.error=true``, when the
whole remainder is the value. A key, value or header value equal to
``null.marker`` (when set) is null.

Consumer line (``RecordFormatter``): the fields asked for, in Kafka's
order — ``CreateTime:ts`` (or ``LogAppendTime:ts``), ``Partition:p``,
``Offset:o``, headers ``k:v,...`` (``NO_HEADERS`` when none), key, value —
joined by ``key.separator`` and ended by ``line.separator``; null keys and
values print as ``null.literal``.

Everything is bytes in, bytes out (records are bytes; lines are written to
stdout's binary buffer). Pure; any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PRODUCER_PROPERTIES: dict[str, str] = {
    "parse.key": "false",
    "key.separator": "\t",
    "parse.headers": "false",
    "headers.delimiter": "\t",
    "headers.separator": ",",
    "headers.key.separator": ":",
    "ignore.error": "false",
    "null.marker": "",
}

CONSUMER_PROPERTIES: dict[str, str] = {
    "print.timestamp": "false",
    "print.key": "false",
    "print.offset": "false",
    "print.partition": "false",
    "print.headers": "false",
    "print.value": "true",
    "key.separator": "\t",
    "line.separator": "\n",
    "headers.separator": ",",
    "null.literal": "null",
}

TIMESTAMP_TYPES = {0: b"CreateTime", 1: b"LogAppendTime"}


class LineError(ValueError):
    """A producer line that does not have the shape the properties ask for."""


@dataclass(frozen=True, slots=True)
class ParsedLine:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _bool(props: Mapping[str, str], name: str) -> bool:
    value = props[name].strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"--property {name} must be true or false, got {props[name]!r}")
    return value == "true"


def _separator(props: Mapping[str, str], name: str) -> bytes:
    sep = props[name].encode()
    if not sep:
        raise ValueError(f"--property {name} must not be empty")
    return sep


@dataclass(frozen=True, slots=True)
class LineParser:
    """Producer line -> record (see the module docstring)."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    ignore_error: bool = False
    null_marker: bytes | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> LineParser:
        return cls(_bool(props, "parse.key"), _separator(props, "key.separator"),
                   _bool(props, "parse.headers"), _separator(props, "headers.delimiter"),
                   _separator(props, "headers.separator"), _separator(props, "headers.key.separator"),
                   _bool(props, "ignore.error"), props["null.marker"].encode() or None)

    def _null(self, data: bytes) -> bytes | None:
        return None if self.null_marker is not None and data == self.null_marker else data

    def parse(self, line: bytes, number: int) -> ParsedLine:
        """``line`` without its line ending; ``number`` (from 1) names it in errors."""
        rest = line
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if self.parse_headers:
            head, sep, tail = rest.partition(self.headers_delimiter)
            if sep:
                headers = self._headers(head, number)
                rest = tail
            elif not self.ignore_error:
                raise LineError(f"no headers delimiter {_show(self.headers_delimiter)} on line {number}: {_show(line)}")
        key = None
        if self.parse_key:
            k, sep, tail = rest.partition(self.key_separator)
            if sep:
                key, rest = self._null(k), tail
            elif not self.ignore_error:
                raise LineError(f"no key separator {_show(self.key_separator)} on line {number}: {_show(line)}")
        return ParsedLine(key, self._null(rest), headers)

    def _headers(self, text: bytes, number: int) -> tuple[tuple[str, bytes | None], ...]:
        out = []
        for item in text.split(self.headers_separator) if text else ():
            k, sep, v = item.partition(self.headers_key_separator)
            if not sep:
                raise LineError(f"header {_show(item)} on line {number} has no "
                                f"{_show(self.headers_key_separator)} between its key and value")
            try:
                name = k.decode()
            except UnicodeDecodeError:
                raise LineError(f"header key {_show(k)} on line {number} is not UTF-8") from None
            out.append((name, self._null(v)))
        return tuple(out)


def _show(data: bytes, limit: int = 80) -> str:
    text = data[:limit].decode(errors="replace")
    return repr(text + ("..." if len(data) > limit else ""))


@dataclass(frozen=True, slots=True)
class RecordFormatter:
    """Consumer record -> line (see the module docstring)."""

    print_timestamp: bool = False
    print_key: bool = False
    print_offset: bool = False
    print_partition: bool = False
    print_headers: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> RecordFormatter:
        return cls(_bool(props, "print.timestamp"), _bool(props, "print.key"), _bool(props, "print.offset"),
                   _bool(props, "print.partition"), _bool(props, "print.headers"), _bool(props, "print.value"),
                   props["key.separator"].encode(), props["line.separator"].encode(),
                   props["headers.separator"].encode(), props["null.literal"].encode())

    def _bytes(self, data: bytes | None) -> bytes:
        return self.null_literal if data is None else data

    def format(self, partition: int, offset: int, timestamp: int, timestamp_type: int,
               headers: tuple[tuple[str, bytes | None], ...], key: bytes | None, value: bytes | None) -> bytes:
        fields: list[bytes] = []
        if self.print_timestamp:
            if timestamp < 0:
                fields.append(b"NO_TIMESTAMP")
            else:
                fields.append(TIMESTAMP_TYPES.get(timestamp_type, b"CreateTime") + b":%d" % timestamp)
        if self.print_partition:
            fields.append(b"Partition:%d" % partition)
        if self.print_offset:
            fields.append(b"Offset:%d" % offset)
        if self.print_headers:
            fields.append(self.headers_separator.join(k.encode() + b":" + self._bytes(v) for k, v in headers)
                          if headers else b"NO_HEADERS")
        if self.print_key:
            fields.append(self._bytes(key))
        if self.print_value:
            fields.append(self._bytes(value))
        return self.key_separator.join(fields) + self.line_separator
