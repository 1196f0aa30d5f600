"""Helpers of the replication-tool tests: topic layout from ``kavka topics
--describe``, producing lines with ``kavka console-producer``, and polling
with a bound."""

from __future__ import annotations

import time


def describe(kavka, bs: str, topic: str) -> dict[int, dict[str, str]]:
    """{partition: {"Leader": ..., "Replicas": ..., "Isr": ...}}."""
    r = kavka("topics", "--bootstrap-server", bs, "--describe", "--topic", topic)
    assert r.returncode == 0, r.stderr
    parts = {}
    for line in r.stdout.splitlines():
        if line.startswith("\tTopic:"):
            fields = dict(f.split(": ", 1) for f in line.strip("\t").split("\t"))
            parts[int(fields["Partition"])] = fields
    return parts


def ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def wait_until(predicate, timeout: float, what: str):
    """Poll ``predicate`` (returning a truthy value) every 0.3 s, at most
    ``timeout`` seconds; the last value, or AssertionError naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.3)


def fully_replicated(kavka, bs: str, topic: str, partitions: int, rf: int) -> bool:
    parts = describe(kavka, bs, topic)
    return len(parts) == partitions and all(
        p["Leader"] != "none" and len(ids(p["Isr"])) == rf for p in parts.values())


def produce(kavka, bs: str, topic: str, lines: list[str]) -> None:
    r = kavka("console-producer", "--bootstrap-server", bs, "--topic", topic, "--acks", "all",
              input="".join(f"{line}\n" for line in lines))
    assert r.returncode == 0, r.stderr
