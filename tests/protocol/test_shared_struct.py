"""``SharedStruct``: an element of a struct array encoded once and then
appended as bytes. Whatever the API, side and version, a message whose
struct-array elements are shared encodes to exactly the bytes of the plain
message, the first time and every time after, and a shared struct met by
another version's plan is encoded for that version, not given the bytes
of the first."""

from __future__ import annotations

import pytest
from hypothesis import given

import schema_strategies as ss
from kavka.protocol.codec import decode_body, encode_body
from kavka.protocol.messages import Message, MetadataResponse, SharedStruct
from kavka.protocol.plan import Compiler
from kavka.protocol.schema import registry

CASES = [c for c in ss.all_versions() if c[1] == "response"]


def _share(msg: Message, version: int, flexible: bool) -> tuple[Message, list[SharedStruct]]:
    """A copy of ``msg`` whose struct-array elements are SharedStructs,
    recursively (a shared element's own arrays too); and those of them in
    arrays of non-leaf structs, whose bytes the encoder is to remember (a
    leaf struct's code is inlined in its array's loop, and a tagged array
    is written by ``fieldio``: both read the shared struct's fields)."""
    compiler = Compiler(version, flexible)
    remembered: list[SharedStruct] = []

    def walk(m: Message) -> Message:
        copy = type(m).__new__(type(m))
        for name in (*m.FIELDS, "_unknown_tags", "_sent_tags"):
            v = getattr(m, name)
            if isinstance(v, list) and v and isinstance(v[0], Message):
                v = [SharedStruct(walk(el)) for el in v]
                field = next(f for f in type(m).SCHEMA[name] if version in f.versions)
                if not compiler.is_leaf(field) and not compiler.tagged(field):
                    remembered.extend(v)
            object.__setattr__(copy, name, v)
        return copy

    return walk(msg), remembered


@pytest.mark.parametrize("case", CASES, ids=[ss.case_id(c) for c in CASES])
def test_shared_elements_encode_to_the_plain_bytes_once_and_again(case):
    key, side, version = case

    @ss.budget(0.5)
    @given(ss.message(key, side, version))
    def check(msg):
        plain = encode_body(msg, version)
        shared, made = _share(msg, version, registry()[key].is_flexible(version))
        assert shared == msg
        assert encode_body(shared, version) == plain
        memos = [s._memo for s in made]
        assert None not in memos
        assert encode_body(shared, version) == plain
        # each element encoded by its array's plan is not encoded again
        assert all(a is b for a, b in zip(memos, (s._memo for s in made), strict=True))
        assert decode_body(key, side, version, memoryview(plain)) == shared

    check()


def _metadata(version: int, topics: list) -> MetadataResponse:
    return MetadataResponse(brokers=[MetadataResponse.Brokers(node_id=1, host="h", port=9092)],
                            cluster_id="c", controller_id=1, topics=topics)


def test_a_shared_struct_is_encoded_anew_for_another_plan():
    """The handler shares an entry per version; a shared struct met by
    another version's plan (different fields, compact or not) must still
    be encoded for that plan."""
    entry = MetadataResponse.Topics(name="t", partitions=[
        MetadataResponse.Topics.Partitions(partition_index=0, leader_id=1, leader_epoch=5,
                                           replica_nodes=[1, 2], isr_nodes=[1], offline_replicas=[2])])
    shared = SharedStruct(entry)
    for version in (12, 1, 9, 8, 12):
        assert encode_body(_metadata(version, [shared]), version) == encode_body(_metadata(version, [entry]), version)
    assert encode_body(_metadata(12, [shared, shared]), 12) == encode_body(_metadata(12, [entry, entry]), 12)


def test_a_shared_struct_reads_and_compares_as_its_struct():
    entry = MetadataResponse.Topics(name="t", error_code=3)
    shared = SharedStruct(entry)
    assert (shared.name, shared.error_code, shared.partitions) == ("t", 3, [])
    assert shared == entry and entry == shared and shared == SharedStruct(entry)
    assert shared != MetadataResponse.Topics(name="u")
    assert _metadata(12, [shared]).to_dict() == _metadata(12, [entry]).to_dict()
    with pytest.raises(AttributeError):
        shared.no_such_field  # noqa: B018
