"""Hypothesis strategies shared by the record tests."""

from hypothesis import strategies as st

from kavka.protocol.records import SimpleRecord

INT64 = (-(2**63), 2**63 - 1)

maybe_bytes = st.none() | st.binary(max_size=64)
headers = st.lists(
    st.tuples(st.text(max_size=8), maybe_bytes), max_size=3
).map(tuple)
# Timestamps near "now" and anywhere in a span that keeps deltas in int64.
timestamps = st.integers(-(2**40), 2**42)

simple_records = st.builds(SimpleRecord, key=maybe_bytes, value=maybe_bytes, timestamp=timestamps, headers=headers)
record_lists = st.lists(simple_records, min_size=1, max_size=12)
