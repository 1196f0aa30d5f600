"""Sanitized entity names: Kafka's Sanitizer byte for byte, and hostile
znode names refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.sanitizer import DEFAULT_ENTITY, desanitize, is_sanitized, sanitize


@pytest.mark.parametrize("name, stored", [
    ("alice", "alice"),
    ("app-1.x_y", "app-1.x_y"),
    ("CN=alice,O=acme", "CN%3Dalice%2CO%3Dacme"),
    ("a b*", "a%20b%2A"),  # Kafka's Sanitizer: space is %20, * is %2A
    ("~/", "%7E%2F"),
    ("é", "%C3%A9"),
    (DEFAULT_ENTITY, "%3Cdefault%3E"),  # a user named <default> is not the default
])
def test_sanitize_writes_what_kafka_writes(name, stored):
    assert sanitize(name) == stored
    assert desanitize(stored) == name


def test_desanitize_reads_javas_url_decoding():
    assert desanitize("a+b") == "a b"
    assert desanitize("%2a") == "*"


@pytest.mark.parametrize("bad", ["", "a/b", "%G1", "%4", "%FF", "a b", ".", ".."])
def test_not_a_sanitized_name(bad):
    assert not is_sanitized(bad)


def test_dot_names_are_kept_as_they_are_and_cannot_be_znodes():
    # Java's URLEncoder keeps '.', so Kafka's layout cannot hold a user "." either.
    assert sanitize(".") == "." and sanitize("..") == ".."
    assert not is_sanitized(".")


def test_default_is_a_name_of_its_own():
    assert is_sanitized(DEFAULT_ENTITY)
    with pytest.raises(ValueError, match="not a sanitized entity name"):
        desanitize(DEFAULT_ENTITY)


@given(st.text(min_size=1, max_size=40).filter(lambda n: n not in (".", "..")))
def test_round_trip(name):
    stored = sanitize(name)
    assert is_sanitized(stored)
    assert "/" not in stored
    assert desanitize(stored) == name
