"""Golden frames: bytes real clients sent (and a broker answered) round-trip
through Kavka's codec byte for byte.

The frames in ``tests/protocol/golden/*.frames`` were captured from
confluent-kafka, kafka-python, aiokafka and kcat by
``tools/capture_frames.py`` (format and provenance: golden/README.md). For a
request, ``decode_request(frame)`` then ``encode_request(header, body)`` must
give the frame back; for a response, ``decode_response(api_key, api_version,
frame)`` then ``encode_response(api_key, api_version, correlation_id, body)``.

A second test checks decode -> encode -> decode keeps the message (so a
frame a broker wrote in non-canonical form still shows whether its meaning
survives), and responses the capture broker got wrong (``broker_fault``)
must be rejected with DecodeError.

Tests are parametrized per (client, API, version, direction) so that an API
whose schema table is missing, or a codec bug in one version, fails alone and
by name. A missing table or codec is a failure, never a skip: every frame
here is something a real client sends.
"""

from __future__ import annotations

import importlib
import json
from collections import defaultdict
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "kcat")

# What every client's scenario exercised (see golden/README.md); a recapture
# that lost one of these would quietly shrink the test.
COMMON_APIS = {"Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch",
               "FindCoordinator", "JoinGroup", "Heartbeat", "SyncGroup", "ApiVersions",
               "InitProducerId"}
ADMIN_APIS = {"CreateTopics", "DeleteTopics", "DescribeConfigs"}
TXN_APIS = {"AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"}
EXPECTED_APIS = {
    "confluent-kafka": COMMON_APIS | ADMIN_APIS | TXN_APIS | {
        "LeaveGroup", "ListGroups", "ConsumerGroupDescribe", "IncrementalAlterConfigs", "DeleteRecords"},
    "kafka-python": COMMON_APIS | ADMIN_APIS | TXN_APIS | {
        "LeaveGroup", "ListGroups", "DescribeGroups", "DeleteGroups", "DescribeCluster", "DeleteRecords"},
    # aiokafka: no LeaveGroup at generation 0 (golden/README.md).
    "aiokafka": COMMON_APIS | ADMIN_APIS | TXN_APIS | {"ListGroups", "DescribeGroups", "DeleteRecords"},
    "kcat": COMMON_APIS | {"LeaveGroup"},  # kcat has no admin API
}
# Requests the capture broker never answered: Tansu 0.6 (memory storage)
# panics on DeleteRecords and drops the connection (golden/README.md).
UNANSWERED = {"DeleteRecords"}


def load_frames() -> list[dict]:
    """Every stored frame, with its client and line number added."""
    frames = []
    for client in CLIENTS:
        path = GOLDEN / f"{client}.frames"
        for line_no, line in enumerate(path.read_text().splitlines(), 1):
            record = json.loads(line)
            record["client"], record["line"] = client, line_no
            record["bytes"] = bytes.fromhex(record["hex"])
            frames.append(record)
    return frames


FRAMES = load_frames()


MALFORMED = [f for f in FRAMES if "broker_fault" in f]


def _groups() -> list:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for f in FRAMES:
        if "broker_fault" in f:
            continue  # checked by test_malformed_broker_frames_are_rejected
        groups[(f["client"], f["api_key"], f["api_name"], f["api_version"], f["dir"])].append(f)
    return [
        pytest.param(key, frames, id=f"{key[0]}-{key[2]}-v{key[3]}-{key[4]}")
        for key, frames in sorted(groups.items())
    ]


def _codec():
    """The module with the header-level codec (decode_request and friends)."""
    try:
        return importlib.import_module("kavka.protocol.headers")
    except ImportError as exc:
        pytest.fail(f"kavka.protocol.headers cannot be imported ({exc}); golden frames need "
                    "decode_request/encode_request/decode_response/encode_response")


def _require_schema(api_key: int, api_name: str, version: int, count: int, client: str) -> None:
    from kavka.protocol.schema import registry

    api = registry().get(api_key)
    if api is None:
        pytest.fail(f"no schema table for {api_name} (key {api_key}): {count} frames {client} "
                    f"sent at v{version} cannot be decoded; add it under kavka/protocol/schema/apis/")
    if not api.min_version <= version <= api.max_version:
        pytest.fail(f"{api_name} table covers v{api.min_version}-v{api.max_version}, "
                    f"but {client} sent v{version}")


def _first_difference(expected: bytes, actual: bytes) -> str:
    n = next((i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b), min(len(expected), len(actual)))
    return (f"lengths {len(expected)} captured vs {len(actual)} re-encoded; first difference at byte {n}: "
            f"captured ...{expected[max(0, n - 8):n + 8].hex()} re-encoded ...{actual[max(0, n - 8):n + 8].hex()}")


def _split(decoded):
    """A decode result as (header, body)."""
    if isinstance(decoded, tuple):
        return decoded
    return decoded.header, decoded.body


# Requests whose captured frame carries bytes after the body. Kafka's
# parser ignores them, and so does ours (rejecting them would break the
# client); re-encoding then gives the frame without them. librdkafka 2.16
# writes its "all topics" Metadata v12 request with three extra bytes after
# the tagged-field block. (client, api key, version) -> trailing byte count.
TRAILING_REQUEST_BYTES = {("confluent-kafka", 3, 12): 3}


def _expected_reencoding(client: str, api_key: int, version: int, direction: str, frame: bytes, again: bytes) -> bytes:
    extra = TRAILING_REQUEST_BYTES.get((client, api_key, version)) if direction == "request" else None
    if extra and len(frame) - len(again) == extra:
        return frame[:-extra]
    return frame


@pytest.mark.parametrize(("key", "frames"), _groups())
def test_frame_round_trips_byte_for_byte(key, frames):
    client, api_key, api_name, version, direction = key
    codec = _codec()
    _require_schema(api_key, api_name, version, len(frames), client)
    failures = []
    for f in frames:
        frame = f["bytes"]
        try:
            if direction == "request":
                header, body = _split(codec.decode_request(frame))
                again = codec.encode_request(header, body)
            else:
                _, body = _split(codec.decode_response(api_key, version, frame))
                again = codec.encode_response(api_key, version, f["correlation_id"], body)
        except Exception as exc:  # noqa: BLE001 - collect every frame's outcome
            failures.append(f"{client}.frames line {f['line']}: {type(exc).__name__}: {exc}")
            continue
        expected = _expected_reencoding(client, api_key, version, direction, frame, bytes(again))
        if bytes(again) != expected:
            failures.append(f"{client}.frames line {f['line']}: {_first_difference(expected, bytes(again))}")
    assert not failures, f"{len(failures)}/{len(frames)} frames differ:\n" + "\n".join(failures[:10])


@pytest.mark.parametrize(("key", "frames"), _groups())
def test_frame_decodes_to_the_same_message_after_re_encoding(key, frames):
    """Weaker than byte equality, and separate so that a frame the codec
    writes differently on purpose (e.g. a broker's default-valued tagged
    field, which the canonical encoding omits) still shows whether its
    meaning survives."""
    client, api_key, api_name, version, direction = key
    codec = _codec()
    _require_schema(api_key, api_name, version, len(frames), client)
    failures = []
    for f in frames:
        try:
            if direction == "request":
                header, body = _split(codec.decode_request(f["bytes"]))
                again = _split(codec.decode_request(codec.encode_request(header, body)))
                same = again == (header, body)
            else:
                _, body = _split(codec.decode_response(api_key, version, f["bytes"]))
                encoded = codec.encode_response(api_key, version, f["correlation_id"], body)
                same = _split(codec.decode_response(api_key, version, encoded))[1] == body
        except Exception as exc:  # noqa: BLE001 - collect every frame's outcome
            failures.append(f"{client}.frames line {f['line']}: {type(exc).__name__}: {exc}")
            continue
        if not same:
            failures.append(f"{client}.frames line {f['line']}: decoded message changed after re-encoding")
    assert not failures, f"{len(failures)}/{len(frames)} frames:\n" + "\n".join(failures[:10])


@pytest.mark.parametrize("frame", MALFORMED, ids=[f"{f['client']}-line{f['line']}" for f in MALFORMED])
def test_malformed_broker_frames_are_rejected(frame):
    """Responses the capture broker got wrong (their ``broker_fault`` says
    how) must raise the codec's DecodeError, never decode to something."""
    from kavka.protocol.errors import DecodeError

    codec = _codec()
    with pytest.raises(DecodeError):
        codec.decode_response(frame["api_key"], frame["api_version"], frame["bytes"])


# ----------------------------------------------------------------- the data itself


@pytest.mark.parametrize("client", CLIENTS)
def test_frames_carry_the_header_fields_they_are_tagged_with(client):
    mine = [f for f in FRAMES if f["client"] == client]
    assert mine, f"{client}.frames is empty"
    for f in mine:
        raw = f["bytes"]
        if f["dir"] == "request":
            assert int.from_bytes(raw[0:2], "big", signed=True) == f["api_key"], f["line"]
            assert int.from_bytes(raw[2:4], "big", signed=True) == f["api_version"], f["line"]
            assert int.from_bytes(raw[4:8], "big", signed=True) == f["correlation_id"], f["line"]
        else:
            assert int.from_bytes(raw[0:4], "big", signed=True) == f["correlation_id"], f["line"]


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_covered_its_scenario(client):
    mine = [f for f in FRAMES if f["client"] == client]
    requested = {f["api_name"] for f in mine if f["dir"] == "request"}
    answered = {f["api_name"] for f in mine if f["dir"] == "response"}
    missing = EXPECTED_APIS[client] - requested
    assert not missing, f"{client} capture lacks requests for {sorted(missing)}"
    unanswered = requested - answered - UNANSWERED
    assert not unanswered, f"{client}: no response captured for {sorted(unanswered)}"


def test_versions_json_lists_exactly_the_captured_request_versions():
    listed = json.loads((GOLDEN / "versions.json").read_text())
    derived: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for f in FRAMES:
        if f["dir"] == "request":
            versions = derived[f["client"]].setdefault(f"{f['api_key']} {f['api_name']}", [])
            if f["api_version"] not in versions:
                versions.append(f["api_version"])
    derived = {c: {k: sorted(v) for k, v in apis.items()} for c, apis in derived.items()}
    assert listed == derived
