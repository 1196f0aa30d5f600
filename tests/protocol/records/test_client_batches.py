"""Record batches built by real clients (every codec) validate, parse field
by field, and detect any single flipped bit in their CRC-covered region.

The batches come from the Produce requests in ``tests/protocol/golden/``
(captured from confluent-kafka, kafka-python, aiokafka and kcat; see the
README there). Each request is walked with Kavka's codec
(``kavka.protocol.headers.decode_request``) to reach its ``records`` fields;
the header fields are then read independently from the byte layout of
KIP-98's batch v2 and compared with ``parse_header``. The records inside
(every codec) are decoded with ``kavka.protocol.records.reader`` and built
again with ``kavka.protocol.records.builder``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
from pathlib import Path

import crc32c
import pytest

from kavka.protocol.records.batch import (
    CRC_START,
    Compression,
    InvalidRecordBatch,
    iter_batches,
    parse_header,
    patch_base_offset,
    patch_leader_epoch,
    validate_batch,
)
from kavka.protocol.records.builder import build_batch, rebuild_batch
from kavka.protocol.records.reader import decode_batch, records_section

GOLDEN = Path(__file__).parent.parent / "golden"
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "kcat")
PRODUCE = 0
FETCH = 1
FLIPS_PER_BATCH = 48  # sampled bit positions per batch; deterministic seed


def _produce_requests() -> list:
    params = []
    for client in CLIENTS:
        for line_no, line in enumerate((GOLDEN / f"{client}.frames").read_text().splitlines(), 1):
            record = json.loads(line)
            if record["dir"] == "request" and record["api_key"] == PRODUCE:
                params.append(pytest.param(client, bytes.fromhex(record["hex"]),
                                           id=f"{client}-v{record['api_version']}-line{line_no}"))
    return params


PRODUCE_REQUESTS = _produce_requests()


def _fetch_responses() -> list:
    params = []
    for client in CLIENTS:
        for line_no, line in enumerate((GOLDEN / f"{client}.frames").read_text().splitlines(), 1):
            record = json.loads(line)
            if record["dir"] == "response" and record["api_key"] == FETCH:
                params.append(pytest.param(record["api_version"], bytes.fromhex(record["hex"]),
                                           id=f"{client}-v{record['api_version']}-line{line_no}"))
    return params


def _records_fields(value) -> list[bytes]:
    """Every non-null ``records`` value inside a decoded message body,
    whatever container types the codec uses (dicts, sequences, dataclasses,
    slotted objects)."""
    found: list[bytes] = []

    def walk(node, name=None):
        if name == "records" and isinstance(node, (bytes, bytearray, memoryview)):
            found.append(bytes(node))
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)
        elif dataclasses.is_dataclass(node):
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name), f.name)
        elif hasattr(node, "__slots__") and not isinstance(node, (str, int, float, bytes)):
            for slot in node.__slots__:
                walk(getattr(node, slot, None), slot)

    walk(value)
    return found


def _headers_codec():
    try:
        return importlib.import_module("kavka.protocol.headers")
    except ImportError as exc:
        pytest.fail(f"kavka.protocol.headers cannot be imported ({exc}); it is needed to walk captured frames")


def batches_of(frame: bytes) -> list[bytes]:
    """The record batches of one Produce request, reached through the codec."""
    decoded = _headers_codec().decode_request(frame)
    body = decoded[1] if isinstance(decoded, tuple) else decoded.body
    blobs = _records_fields(body)
    assert blobs, "the decoded Produce request has no records field"
    out = []
    for blob in blobs:
        positions = [(pos, header.size) for pos, header in iter_batches(blob)]
        covered = sum(size for _, size in positions)
        assert covered == len(blob), f"records field of {len(blob)} bytes holds {covered} bytes of whole batches"
        out.extend(blob[pos:pos + size] for pos, size in positions)
    return out


def _field(batch: bytes, offset: int, size: int, *, signed: bool = True) -> int:
    return int.from_bytes(batch[offset:offset + size], "big", signed=signed)


@pytest.mark.parametrize(("client", "frame"), PRODUCE_REQUESTS)
def test_client_batch_validates_and_parses_field_by_field(client, frame):
    for batch in batches_of(frame):
        header = validate_batch(batch)
        assert header == parse_header(batch)
        # The v2 layout (KIP-98), read here offset by offset.
        assert header.base_offset == _field(batch, 0, 8) == 0, "clients send base offset 0"
        assert header.batch_length == _field(batch, 8, 4) == len(batch) - 12
        assert header.partition_leader_epoch == _field(batch, 12, 4)
        assert header.magic == batch[16] == 2
        assert header.crc == _field(batch, 17, 4, signed=False) == crc32c.crc32c(batch[21:])
        assert header.attributes == _field(batch, 21, 2)
        assert header.last_offset_delta == _field(batch, 23, 4)
        assert header.base_timestamp == _field(batch, 27, 8)
        assert header.max_timestamp == _field(batch, 35, 8)
        assert header.producer_id == _field(batch, 43, 8)
        assert header.producer_epoch == _field(batch, 51, 2)
        assert header.base_sequence == _field(batch, 53, 4)
        assert header.record_count == _field(batch, 57, 4)
        # What a well-behaved client's batch says about itself.
        assert header.record_count == header.last_offset_delta + 1
        assert header.max_timestamp >= header.base_timestamp > 0
        assert not header.is_control
        if header.producer_id >= 0:  # idempotent or transactional
            assert header.producer_epoch >= 0 and header.base_sequence >= 0


@pytest.mark.parametrize(("client", "frame"), PRODUCE_REQUESTS)
def test_any_flipped_bit_in_the_crc_region_fails_validation(client, frame):
    rng = random.Random(f"{client}:{len(frame)}")
    for batch in batches_of(frame):
        # Attributes onward, plus the stored CRC itself (offsets 17-20).
        bits = range((CRC_START - 4) * 8, len(batch) * 8)
        for bit in rng.sample(bits, min(FLIPS_PER_BATCH, len(bits))):
            damaged = bytearray(batch)
            damaged[bit // 8] ^= 1 << (bit % 8)
            with pytest.raises(InvalidRecordBatch):
                validate_batch(damaged)


@pytest.mark.parametrize(("client", "frame"), PRODUCE_REQUESTS)
def test_bits_outside_the_crc_region_are_free_to_patch(client, frame):
    """Base offset and leader epoch sit before the CRC so the leader can
    assign them without recomputing it."""
    for batch in batches_of(frame):
        patched = bytearray(batch)
        patch_base_offset(patched, 1 << 40)
        patch_leader_epoch(patched, 7)
        header = validate_batch(patched)
        assert (header.base_offset, header.partition_leader_epoch) == (1 << 40, 7)
        assert patched[CRC_START - 4:] == batch[CRC_START - 4:]


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_sent_every_codec(client):
    frames = [p.values[1] for p in PRODUCE_REQUESTS if p.values[0] == client]
    codecs = {validate_batch(b).compression for f in frames for b in batches_of(f)}
    assert codecs == set(Compression), f"{client} batches used only {sorted(c.name for c in codecs)}"


# ----------------------------------------------------------------- records inside


def _rebuild_from_scratch(header, records) -> bytes:
    """The batch Kavka's producer-side builder makes from the same records."""
    return build_batch(
        [r.to_simple() for r in records],
        base_offset=header.base_offset,
        compression=header.compression,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
    )


@pytest.mark.parametrize(("client", "frame"), PRODUCE_REQUESTS)
def test_client_records_decode_to_what_the_scenario_sent(client, frame):
    # The capture scenario (tools/capture_clients.py) sends keys k0, k1, ...
    # each with a single header "h" and a value that holds "v<i>-".
    for batch in batches_of(frame):
        header, records = decode_batch(batch)
        assert len(records) == header.record_count
        assert [r.offset_delta for r in records] == list(range(header.record_count))
        for i, rec in enumerate(records):
            assert rec.key == f"k{i}".encode()
            assert f"v{i}-".encode() in rec.value
            assert [name for name, _ in rec.headers] == ["h"]
            assert header.base_timestamp <= rec.timestamp <= header.max_timestamp


@pytest.mark.parametrize(("client", "frame"), PRODUCE_REQUESTS)
def test_kavka_builders_reproduce_client_batches(client, frame):
    """Uncompressed: byte for byte. Compressed: codecs are free to emit
    different (equally valid) bytes, so the decompressed records sections
    and the decoded records must match instead."""
    for batch in batches_of(frame):
        header, records = decode_batch(batch)
        for rebuilt in (_rebuild_from_scratch(header, records), rebuild_batch(header, records)):
            if header.compression is Compression.NONE:
                assert rebuilt == batch, f"first difference at byte " \
                    f"{next(i for i, (a, b) in enumerate(zip(rebuilt, batch, strict=False)) if a != b)}"
                continue
            again, again_records = decode_batch(rebuilt)
            assert again_records == records
            assert bytes(records_section(rebuilt, again)) == bytes(records_section(batch, header))
            assert again._replace(crc=0, batch_length=0) == \
                header._replace(crc=0, batch_length=0)


@pytest.mark.parametrize(("version", "frame"), _fetch_responses())
def test_batches_served_back_in_fetch_responses_validate_and_decode(version, frame):
    """The same client batches after a broker stored them: offsets assigned
    by patching the base offset, CRC untouched. A fetch may end in a partial
    batch, which is left alone."""
    decoded = _headers_codec().decode_response(FETCH, version, frame)
    body = decoded[1] if isinstance(decoded, tuple) else decoded.body
    for blob in _records_fields(body):
        expected_offset = None
        for pos, header in iter_batches(blob):
            if expected_offset is not None:
                assert header.base_offset == expected_offset, "batches in one partition are contiguous"
            expected_offset = header.next_offset
            _, records = decode_batch(blob[pos:pos + header.size])
            assert [r.offset for r in records] == list(range(header.base_offset, header.next_offset))


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_fetched_every_codec_back(client):
    codecs = set()
    for param in _fetch_responses():
        if not param.id.startswith(f"{client}-v"):
            continue
        version, frame = param.values
        decoded = _headers_codec().decode_response(FETCH, version, frame)
        body = decoded[1] if isinstance(decoded, tuple) else decoded.body
        codecs |= {h.compression for blob in _records_fields(body) for _, h in iter_batches(blob)}
    assert codecs == set(Compression), f"{client} fetched only {sorted(c.name for c in codecs)}"
