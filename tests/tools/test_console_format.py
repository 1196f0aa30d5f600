"""``kavka.tools.console_format`` and ``client_cli`` property parsing: how a
producer line becomes a record, how a record becomes a consumer line, and
that the two agree (a consumer's ``print.key`` output fed back to a
``parse.key`` producer gives the same records)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.tools.client_cli import CliError, parse_properties, unescape
from kavka.tools.console_format import (
    CONSUMER_PROPERTIES,
    PRODUCER_PROPERTIES,
    LineError,
    LineParser,
    ParsedLine,
    RecordFormatter,
)

# Bytes that are neither the separator (TAB) nor a line break.
plain = st.binary(max_size=40).filter(lambda b: b"\t" not in b and b"\n" not in b)


def test_plain_lines_are_values():
    p = LineParser()
    assert p.parse(b"hello\tworld", 1) == ParsedLine(None, b"hello\tworld")
    assert p.parse(b"", 1) == ParsedLine(None, b"")


def test_keys_split_at_the_first_separator():
    p = LineParser.from_properties({**PRODUCER_PROPERTIES, "parse.key": "true"})
    assert p.parse(b"k\tv\tw", 1) == ParsedLine(b"k", b"v\tw")
    assert p.parse(b"\tv", 1) == ParsedLine(b"", b"v")


def test_missing_key_separator_is_an_error_naming_the_line_unless_ignored():
    p = LineParser.from_properties({**PRODUCER_PROPERTIES, "parse.key": "true"})
    with pytest.raises(LineError, match="line 7.*nokey"):
        p.parse(b"nokey", 7)
    q = LineParser.from_properties({**PRODUCER_PROPERTIES, "parse.key": "true", "ignore.error": "true"})
    assert q.parse(b"nokey", 7) == ParsedLine(None, b"nokey")


def test_headers_then_key_then_value_and_null_marker():
    props = {**PRODUCER_PROPERTIES, "parse.key": "true", "parse.headers": "true", "key.separator": ",",
             "headers.delimiter": "|", "headers.separator": ";", "null.marker": "NULL"}
    p = LineParser.from_properties(props)
    assert p.parse(b"h1:a;h2:NULL|k,v", 1) == ParsedLine(b"k", b"v", (("h1", b"a"), ("h2", None)))
    assert p.parse(b"|NULL,NULL", 1) == ParsedLine(None, None, ())
    with pytest.raises(LineError, match="header"):
        p.parse(b"h1|k,v", 2)
    with pytest.raises(LineError, match="headers delimiter"):
        p.parse(b"k,v", 3)


def test_bad_property_values_are_refused():
    with pytest.raises(ValueError, match="parse.key must be true or false"):
        LineParser.from_properties({**PRODUCER_PROPERTIES, "parse.key": "yes"})
    with pytest.raises(ValueError, match="key.separator must not be empty"):
        LineParser.from_properties({**PRODUCER_PROPERTIES, "key.separator": ""})
    with pytest.raises(CliError, match="unknown --property parse.keys"):
        parse_properties(["parse.keys=true"], PRODUCER_PROPERTIES)
    with pytest.raises(CliError, match="not KEY=VALUE"):
        parse_properties(["parse.key"], PRODUCER_PROPERTIES)


def test_property_values_are_unescaped():
    assert parse_properties([r"key.separator=\t"], PRODUCER_PROPERTIES)["key.separator"] == "\t"
    assert unescape(r"a\\tb\nc\q") == "a\\tb\nc\\q"


def test_consumer_line_in_kafka_order():
    f = RecordFormatter.from_properties({**CONSUMER_PROPERTIES, **{f"print.{k}": "true" for k in
                                         ("timestamp", "key", "offset", "partition", "headers")}})
    line = f.format(3, 42, 1700000000000, 0, (("a", b"1"), ("b", None)), b"k", b"v")
    assert line == b"CreateTime:1700000000000\tPartition:3\tOffset:42\ta:1,b:null\tk\tv\n"
    assert f.format(0, 0, 5, 1, (), None, None) == b"LogAppendTime:5\tPartition:0\tOffset:0\tNO_HEADERS\tnull\tnull\n"
    assert f.format(0, 0, -1, 0, (), b"k", b"v").startswith(b"NO_TIMESTAMP\t")


def test_default_consumer_line_is_the_value():
    f = RecordFormatter.from_properties(CONSUMER_PROPERTIES)
    assert f.format(0, 1, 2, 0, (), b"key", b"value") == b"value\n"
    g = RecordFormatter.from_properties({**CONSUMER_PROPERTIES, "print.value": "false", "print.key": "true",
                                         "line.separator": "|"})
    assert g.format(0, 1, 2, 0, (), b"key", b"value") == b"key|"


@settings(max_examples=100)
@given(st.lists(st.tuples(plain, plain), max_size=20))
def test_consumer_key_output_replays_through_a_key_parsing_producer(records):
    out = RecordFormatter.from_properties({**CONSUMER_PROPERTIES, "print.key": "true"})
    inp = LineParser.from_properties({**PRODUCER_PROPERTIES, "parse.key": "true"})
    text = b"".join(out.format(0, i, 0, 0, (), k, v) for i, (k, v) in enumerate(records))
    lines = text.split(b"\n")[:-1]
    assert [(r.key, r.value) for r in (inp.parse(line, n) for n, line in enumerate(lines, 1))] == records
