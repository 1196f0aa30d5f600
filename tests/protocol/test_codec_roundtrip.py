"""Generic round trip of every API, side and version in the registry:
random messages drawn from the schema itself are encoded, decoded and
re-encoded; the bytes and the values must agree. Covers every table in
kavka/protocol/schema/apis/ automatically."""

import pytest
from hypothesis import given

import schema_strategies as ss
from kavka.protocol.codec import decode_body, encode_body

CASES = ss.all_versions()


@pytest.mark.parametrize("case", CASES, ids=[ss.case_id(c) for c in CASES])
def test_round_trip(case):
    key, side, version = case

    @ss.budget()
    @given(ss.message(key, side, version))
    def check(msg):
        data = encode_body(msg, version)
        decoded = decode_body(key, side, version, memoryview(data))
        assert encode_body(decoded, version) == data
        assert decoded == msg

    check()
