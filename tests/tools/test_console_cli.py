"""``kavka console-producer`` and ``kavka console-consumer`` as subprocesses
against a real cluster: keyed round trip (partitioned as Kafka's murmur2
partitioner does, offsets contiguous), ``--max-messages``, ``--partition
--offset``, the default start at the end, acks and compression, headers,
failures reported per record (MESSAGE_TOO_LARGE), unknown topics, ``--group``
through the broker's group coordinator, a cluster that goes away, and ``--help`` of every
command."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kavka.cli import _available
from kavka.client.partitioner import partition_for_key
from kavka.tools.ports import free_port

PRINT_ALL = ("--property", "print.key=true", "--property", "print.partition=true",
             "--property", "print.offset=true")


def _create(kavka, bs: str, topic: str, partitions: int, *extra: str) -> None:
    r = kavka("topics", "--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", str(partitions),
              "--replication-factor", "1", *extra)
    assert r.returncode == 0, r.stderr


def _rows(out: str) -> list[tuple[int, int, str, str]]:
    """print.partition/offset/key lines -> (partition, offset, key, value)."""
    rows = []
    for line in out.splitlines():
        p, o, k, v = line.split("\t", 3)
        rows.append((int(p.removeprefix("Partition:")), int(o.removeprefix("Offset:")), k, v))
    return rows


@pytest.mark.cluster
def test_keyed_round_trip_and_positions(make_cluster, kavka):
    cluster = make_cluster(brokers=2)
    bs = cluster.bootstrap
    _create(kavka, bs, "lines", 3)
    n = 300
    text = "".join(f"key-{i}\tvalue {i}\n" for i in range(n))
    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "lines", "--property", "parse.key=true",
              input=text)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr

    c = ("console-consumer", "--bootstrap-server", bs, "--topic", "lines")
    r = kavka(*c, "--from-beginning", "--max-messages", str(n), *PRINT_ALL, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == f"Processed a total of {n} messages"
    rows = _rows(r.stdout)
    assert sorted((k, v) for _, _, k, v in rows) == sorted((f"key-{i}", f"value {i}") for i in range(n))
    for p, _, k, _ in rows:
        assert p == partition_for_key(k.encode(), 3)  # Kafka's default partitioner
    by_partition: dict[int, list[int]] = {}
    for p, o, _, _ in rows:
        by_partition.setdefault(p, []).append(o)
    for offsets in by_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))  # contiguous from 0, each once

    r = kavka(*c, "--from-beginning", "--max-messages", "5")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 5
    assert r.stderr.strip() == "Processed a total of 5 messages"

    # --partition 1 --offset 2: exactly partition 1's records from offset 2, then --timeout-ms ends it.
    r = kavka(*c, "--partition", "1", "--offset", "2", "--timeout-ms", "1500", *PRINT_ALL)
    got = _rows(r.stdout)
    assert r.returncode == 0 and [o for _, o, _, _ in got] == list(range(2, len(by_partition[1])))
    assert {p for p, _, _, _ in got} == {1}

    # Without --from-beginning the consumer starts at the end: it prints only
    # what is produced after it started (produced until it has one, bounded).
    proc = subprocess.Popen([sys.executable, "-m", "kavka", *c, "--max-messages", "1", "--timeout-ms", "20000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for i in range(40):
            kavka("console-producer", "--bootstrap-server", bs, "--topic", "lines", input=f"late {i}\n")
            if proc.poll() is not None:
                break
            time.sleep(0.25)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out.startswith("late "), out


@pytest.mark.cluster
def test_acks_compression_and_headers(make_cluster, kavka):
    cluster = make_cluster(brokers=1)
    bs = cluster.bootstrap
    _create(kavka, bs, "opts", 1)
    sent = []
    for acks, codec in (("0", "none"), ("1", "gzip"), ("all", "lz4"), ("-1", "zstd"), ("1", "snappy")):
        line = f"acks={acks} codec={codec}"
        r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "opts", "--acks", acks,
                  "--compression-type", codec, input=line + "\n")
        assert (r.returncode, r.stderr) == (0, ""), r.stderr
        sent.append(line)
    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "opts", "--property", "parse.headers=true",
              "--property", "parse.key=true", "--property", "headers.delimiter=|", "--property", "null.marker=NULL",
              input="h1:a,h2:NULL|k\tv\n")
    assert r.returncode == 0, r.stderr
    r = kavka("console-consumer", "--bootstrap-server", bs, "--topic", "opts", "--from-beginning",
              "--max-messages", "6", "--property", "print.headers=true", "--property", "print.key=true",
              "--property", "print.timestamp=true", "--property", "null.literal=<null>")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split("\t")[-1] for line in lines[:5]] == sent
    assert all(line.startswith("CreateTime:") for line in lines)
    assert lines[0].split("\t")[1:3] == ["NO_HEADERS", "<null>"]
    assert lines[5].split("\t")[1:] == ["h1:a,h2:<null>", "k", "v"]

    # A LogAppendTime topic: the broker stamps the batch, and the consumer says so.
    _create(kavka, bs, "stamped", 1, "--config", "message.timestamp.type=LogAppendTime")
    before = int(time.time() * 1000)
    assert kavka("console-producer", "--bootstrap-server", bs, "--topic", "stamped", input="x\n").returncode == 0
    r = kavka("console-consumer", "--bootstrap-server", bs, "--topic", "stamped", "--from-beginning",
              "--max-messages", "1", "--property", "print.timestamp=true")
    kind, _, rest = r.stdout.partition(":")
    assert kind == "LogAppendTime" and int(rest.split("\t")[0]) >= before - 1000, r.stdout


@pytest.mark.cluster
def test_failures_are_reported(make_cluster, kavka):
    cluster = make_cluster(brokers=1, config={"auto.create.topics.enable": "false"})
    bs = cluster.bootstrap
    _create(kavka, bs, "small", 1, "--config", "max.message.bytes=1000")

    # The broker refuses the 2nd record (MESSAGE_TOO_LARGE): reported with its line, exit 1; the others land.
    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "small", "--sync",
              input="ok 1\n" + "x" * 5000 + "\nok 3\n")
    assert r.returncode == 1
    assert "line 2 was not delivered" in r.stderr and "MESSAGE_TOO_LARGE" in r.stderr, r.stderr
    assert "1 of 3 records were not delivered" in r.stderr
    r = kavka("console-consumer", "--bootstrap-server", bs, "--topic", "small", "--from-beginning",
              "--timeout-ms", "1500")
    assert r.stdout.splitlines() == ["ok 1", "ok 3"]
    # CRLF line ends lose the CR; a last line without a newline is still a record.
    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "small", input="crlf\r\nlast")
    assert r.returncode == 0, r.stderr
    r = kavka("console-consumer", "--bootstrap-server", bs, "--topic", "small", "--partition", "0",
              "--offset", "2", "--max-messages", "2")
    assert r.stdout == "crlf\nlast\n"

    # Every record refused (min.insync.replicas=2 with one replica; NOT_ENOUGH_REPLICAS is retried until
    # the delivery timeout): ten reported one by one, then counted.
    _create(kavka, bs, "strict", 1, "--config", "min.insync.replicas=2")
    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "strict", "--acks", "all",
              "--delivery-timeout-ms", "1500",
              input="".join(f"r{i}\n" for i in range(30)))
    lines = r.stderr.splitlines()
    assert r.returncode == 1 and len([x for x in lines if "was not delivered to topic strict" in x]) == 10
    assert lines[-1] == "Error: 30 of 30 records were not delivered (NOT_ENOUGH_REPLICAS: 30)", r.stderr

    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "small", "--max-line-bytes", "10",
              input="short\n" + "y" * 50 + "\n")
    assert r.returncode == 1 and "line 2 is longer than --max-line-bytes=10" in r.stderr, r.stderr
    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", "small", "--property", "parse.key=true",
              input="k\tv\nnokey\n")
    assert r.returncode == 1 and "no key separator '\\t' on line 2: 'nokey'" in r.stderr, r.stderr

    for cmd in ("console-producer", "console-consumer"):
        r = kavka(cmd, "--bootstrap-server", bs, "--topic", "nosuch", input="x\n")
        assert r.returncode == 1 and "Error: topic 'nosuch' does not exist" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr

    # --group: the broker's group coordinator assigns the partition and keeps the commit, so a second run of
    # the same group starts after what the first one read.
    r = kavka("console-consumer", "--bootstrap-server", bs, "--topic", "small", "--group", "g1", "--from-beginning",
              "--max-messages", "4", "--timeout-ms", "30000")
    assert r.returncode == 0 and r.stdout.splitlines() == ["ok 1", "ok 3", "crlf", "last"], (r.stdout, r.stderr)
    assert kavka("console-producer", "--bootstrap-server", bs, "--topic", "small", input="after\n").returncode == 0
    r = kavka("console-consumer", "--bootstrap-server", bs, "--topic", "small", "--group", "g1", "--from-beginning",
              "--max-messages", "1", "--timeout-ms", "30000")
    assert r.returncode == 0 and r.stdout.splitlines() == ["after"], (r.stdout, r.stderr)
    r = kavka("console-consumer", "--bootstrap-server", bs, "--topic", "small", "--partition", "3")
    assert r.returncode == 1 and "not 3" in r.stderr

    # The cluster goes away under a running consumer: a clear error once no fetch succeeded for the timeout.
    proc = subprocess.Popen([sys.executable, "-m", "kavka", "console-consumer", "--bootstrap-server", bs,
                             "--topic", "small", "--from-beginning", "--request-timeout-ms", "2000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        line = proc.stdout.readline()  # it is consuming: "ok 1" printed
        assert line == "ok 1\n" and time.monotonic() < deadline
        cluster.stop()
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 1 and "Error:" in err and "Traceback" not in err, err


@pytest.mark.parametrize("cmd", ["console-producer", "console-consumer"])
def test_no_broker_is_a_clear_error(kavka, cmd):
    r = kavka(cmd, "--bootstrap-server", f"127.0.0.1:{free_port()}", "--topic", "t", input="x\n", timeout=30)
    assert r.returncode == 1 and "Error: no broker reachable" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, words", [
    (["console-consumer", "--offset", "5"], "--offset needs --partition"),
    (["console-consumer", "--partition", "0", "--offset", "soon"], "earliest, latest or"),
    (["console-consumer", "--max-messages", "0"], "at least 1"),
    (["console-consumer", "--property", "print.keys=true"], "unknown --property print.keys"),
    (["console-consumer", "--group", "g", "--partition", "0"], "cannot be combined"),
    (["console-producer", "--property", "parse.key=maybe"], "true or false"),
    (["console-producer", "--acks", "2"], "invalid choice"),
])
def test_bad_options_exit_2(kavka, args, words):
    cmd, *rest = args
    r = kavka(cmd, "--bootstrap-server", "127.0.0.1:1", "--topic", "t", *rest, input="")
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("command", sorted(_available()))
def test_every_command_has_help(kavka, command):
    r = kavka(command, "--help")
    assert r.returncode == 0 and r.stdout.startswith(f"usage: kavka {command}"), r.stderr


def test_top_level_help_lists_the_client_commands(kavka):
    r = kavka("--help")
    assert r.returncode == 0
    for command in ("topics", "console-producer", "console-consumer", "up"):
        assert f"  {command} " in r.stdout
