"""kcat (Debian's, on librdkafka 2.0.2) against a 3-broker Kavka cluster:
produce 10,000 records with acks=1 and 10,000 with acks=all, consume them
with ``assign`` (kcat -C without -G) from the beginning and compare every
(partition, offset, key, value) and each record's CreateTime against the
window it was produced in, list offsets (kcat -Q: earliest, latest, by
time), list metadata (kcat -L); then check that every request was sent at
kcat's preferred version (as captured in
``tests/protocol/golden/versions.json``).

kcat has no admin API: the topic is created, described, altered and
deleted with Kavka's own admin client (``kavka.client.admin``), whose
traffic carries another client id. kcat's librdkafka (< 2.2) misreads
tagged fields holding non-default values ("Read underflow"), so this test
is also the check that Kavka writes empty tagged-field blocks to it.
kcat cannot set a record's timestamp, so ListOffsets by time is checked at
the boundary between the two runs instead of at planned timestamps.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time

import pytest

from kavka.client.admin_types import NewTopic, ResourceType

from .clients.harness import (
    ALTERED_KEY,
    ALTERED_VALUE,
    EXTRA_PARTITIONS,
    PARTITIONS,
    PRODUCER_BATCH_BYTES,
    TOPIC_CONFIGS,
    HRec,
    Plan,
    Rec,
    assert_preferred_versions,
    assert_rolled,
    assert_same_hrecords,
    assert_same_records,
    extras_plan,
    kavka_admin,
    proxied_cluster,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

KCAT = shutil.which("kcat")
if KCAT is None:
    pytest.fail("kcat is not installed: run `make deps` (Debian package kcat)", pytrace=False)

CLIENT_ID = "kavka-test-kcat"
TOPIC = "clients-kcat"
# kcat 1.7.1 / librdkafka 2.0.2's choice for each API it sends here.
EXPECTED_VERSIONS = {0: 7, 1: 11, 2: 2, 3: 4, 18: 3}
QUERY_LINE = re.compile(r"^(?P<topic>\S+) \[(?P<partition>\d+)\] offset (?P<offset>-?\d+)$")


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from proxied_cluster(zookeeper, tmp_path_factory)


def _kcat(cluster, *args: str, stdin: bytes | None = None, timeout: float = 60, client_id: str = CLIENT_ID) -> str:
    cmd = [KCAT, "-b", cluster.bootstrap, "-X", f"client.id={client_id}", "-m", "10", *args]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, (f"{' '.join(cmd)} exited with {proc.returncode}:\n"
                                  f"{proc.stderr.decode(errors='replace')}\n{cluster.broker_logs(15)}")
    return proc.stdout.decode()


def _metadata(cluster) -> dict:
    return json.loads(_kcat(cluster, "-L", "-J"))


def _wait_leaders(cluster) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topics = {t["topic"]: t for t in _metadata(cluster)["topics"]}
        t = topics.get(TOPIC)
        if t is not None and "error" not in t and len(t["partitions"]) == PARTITIONS \
                and all(p["leader"] >= 0 for p in t["partitions"]):
            return
        time.sleep(0.2)
    raise AssertionError(f"kcat -L shows no leader for every partition of {TOPIC} after 30 s")


def _produce(cluster, plan: Plan) -> list[int]:
    """Runs kcat -P once per partition and acks; returns the wall-clock
    marks (ms) before the first run, between the runs and after the last."""
    marks = [int(time.time() * 1000)]
    for run, acks in zip(plan.runs, ("1", "all"), strict=True):
        for p in range(PARTITIONS):
            # "key<TAB>value" lines; a line without the delimiter has a null key.
            lines = [r.value if r.key is None else r.key + b"\t" + r.value for r in run if r.partition == p]
            _kcat(cluster, "-P", "-t", TOPIC, "-p", str(p), "-K", "\t", "-X", f"acks={acks}",
                  "-X", "linger.ms=5",
                  "-X", f"batch.size={PRODUCER_BATCH_BYTES}", stdin=b"\n".join(lines) + b"\n")
        time.sleep(0.005)  # the next run's CreateTime is strictly later
        marks.append(int(time.time() * 1000))
    return marks


def _consume(cluster) -> list[tuple[Rec, int]]:
    out = _kcat(cluster, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-J", "-q")
    got = []
    for line in out.splitlines():
        m = json.loads(line)
        key = None if m["key"] is None else m["key"].encode()
        got.append((Rec(m["partition"], m["offset"], key, m["payload"].encode(), 0), m["ts"]))
    return got


def _query(cluster, timestamp: int, topic: str = TOPIC, partitions: int = PARTITIONS,
           client_id: str = CLIENT_ID) -> dict[int, int]:
    specs = [a for p in range(partitions) for a in ("-t", f"{topic}:{p}:{timestamp}")]
    found = {}
    for line in _kcat(cluster, "-Q", *specs, client_id=client_id).splitlines():
        m = QUERY_LINE.match(line.strip())
        assert m is not None and m["topic"] == topic, f"unexpected kcat -Q line {line!r}"
        found[int(m["partition"])] = int(m["offset"])
    return found


def test_kcat_round_trip(cluster) -> None:
    kavka_admin(cluster.bootstrap, lambda a: a.create_topics([NewTopic(TOPIC, PARTITIONS, 1, configs=TOPIC_CONFIGS)]))
    _wait_leaders(cluster)

    plan = Plan(0)
    before, between, after = _produce(cluster, plan)
    consumed = _consume(cluster)
    assert_same_records([r for r, _ in consumed], plan, "kcat", with_timestamps=False)
    assert_rolled(cluster, TOPIC)
    # CreateTime set by librdkafka at produce time: each record's falls in
    # its run's window.
    run_of = {(r.partition, r.offset): run for run, recs in enumerate(plan.runs) for r in recs}
    windows = ((before, between), (between, after))
    late = [(r, ts) for r, ts in consumed
            if not windows[run_of[r.partition, r.offset]][0] <= ts <= windows[run_of[r.partition, r.offset]][1]]
    assert not late, f"{len(late)} records have a timestamp outside their run's window, first {late[:3]}"

    # ListOffsets: -2 earliest, -1 latest (the high watermark), by time.
    assert _query(cluster, -2) == {p: 0 for p in range(PARTITIONS)}
    assert _query(cluster, -1) == dict(enumerate(plan.end_offsets))
    first_of_run_two = {p: min(r.offset for r in plan.runs[1] if r.partition == p) for p in range(PARTITIONS)}
    assert _query(cluster, between) == first_of_run_two
    assert _query(cluster, after + 60_000) == {p: -1 for p in range(PARTITIONS)}

    # Configs, with Kavka's admin client (kcat has none).
    async def configs(admin):
        await admin.incremental_alter_configs(ResourceType.TOPIC, TOPIC, [(ALTERED_KEY, 0, ALTERED_VALUE)])
        return await admin.describe_configs(ResourceType.TOPIC, TOPIC)
    entries = kavka_admin(cluster.bootstrap, configs)
    assert entries[ALTERED_KEY].value == ALTERED_VALUE
    assert entries["segment.bytes"].value == TOPIC_CONFIGS["segment.bytes"]

    kavka_admin(cluster.bootstrap, lambda a: a.delete_topics([TOPIC]))
    deadline = time.monotonic() + 30
    while TOPIC in {t["topic"] for t in _metadata(cluster)["topics"]}:
        assert time.monotonic() < deadline, f"{TOPIC} still listed by kcat -L 30 s after its deletion"
        time.sleep(0.2)

    negotiated = assert_preferred_versions(cluster.proxy.calls(CLIENT_ID), EXPECTED_VERSIONS, "kcat")
    assert {name for name, _ in negotiated.software} == {"librdkafka"}  # KIP-511, ApiVersions v3+
    version = subprocess.run([KCAT, "-V"], capture_output=True, text=True, timeout=10).stdout
    kcat_version = re.search(r"Version (\S+)", version)
    librdkafka = re.search(r"librdkafka [0-9.]+", version)
    print(f"kcat {kcat_version and kcat_version[1]} ({librdkafka and librdkafka[0]}): {negotiated.describe()}")


EXTRAS_TOPIC = "clients-kcat-extras"


def test_kcat_compression_headers_and_acks0(cluster) -> None:
    """Every codec (kcat -X compression.codec) with a header (kcat -H sets
    the same headers on every record of a run), acks=0, and consuming with
    small partition fetches."""
    client_id = f"{CLIENT_ID}-extras"

    kavka_admin(cluster.bootstrap, lambda a: a.create_topics([NewTopic(EXTRAS_TOPIC, EXTRA_PARTITIONS, 1)]))
    deadline = time.monotonic() + 30
    while not any(t["topic"] == EXTRAS_TOPIC and "error" not in t and all(p["leader"] >= 0 for p in t["partitions"])
                  for t in json.loads(_kcat(cluster, "-L", "-J", client_id=client_id))["topics"]):
        assert time.monotonic() < deadline, f"no leaders for {EXTRAS_TOPIC} after 30 s"
        time.sleep(0.2)

    plan = {run: [HRec(r.partition, r.offset, r.key, r.value, (("codec", run.encode()),) if run != "acks0" else ())
                  for r in recs] for run, recs in extras_plan().items()}
    for run, recs in plan.items():
        options = ["-X", "acks=0"] if run == "acks0" else \
            ["-X", f"compression.codec={run}", "-H", f"codec={run}", "-X", "linger.ms=20",
             "-X", f"batch.size={PRODUCER_BATCH_BYTES}"]
        lines = [r.value if r.key is None else r.key + b"\t" + r.value for r in recs]
        _kcat(cluster, "-P", "-t", EXTRAS_TOPIC, "-p", str(recs[0].partition), "-K", "\t", *options,
              stdin=b"\n".join(lines) + b"\n", client_id=client_id)

    # acks=0: kcat -P exits once the records are written to the socket, so
    # wait for the broker to have appended them all before kcat -C, which
    # stops (-e) at the first end of partition it sees.
    ends = {p: sum(len(recs) for recs in plan.values() if recs[0].partition == p) for p in range(EXTRA_PARTITIONS)}
    deadline = time.monotonic() + 30
    while _query(cluster, -1, EXTRAS_TOPIC, EXTRA_PARTITIONS, client_id) != ends:
        assert time.monotonic() < deadline, f"{EXTRAS_TOPIC} latest offsets never reached {ends}"
        time.sleep(0.1)
    out = _kcat(cluster, "-C", "-t", EXTRAS_TOPIC, "-o", "beginning", "-e", "-J", "-q",
                "-X", "fetch.message.max.bytes=2000", client_id=client_id)
    got = []
    for line in out.splitlines():
        m = json.loads(line)
        flat = m.get("headers") or []
        headers = tuple((flat[i], flat[i + 1].encode()) for i in range(0, len(flat), 2))
        got.append(HRec(m["partition"], m["offset"], None if m["key"] is None else m["key"].encode(),
                        m["payload"].encode(), headers))
    assert_same_hrecords(got, plan, "kcat")
