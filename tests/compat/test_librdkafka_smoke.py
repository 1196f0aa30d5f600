"""A quick subset of librdkafka's integration suite (``make compat`` runs all
of it) against a local 3-broker cluster in the suite's default scenario, and
a SASL test against a one-broker secured cluster (``kavka.tools.compat_secure``),
so that compatibility with the C client cannot silently regress.

The test runner is built once from ``../shared/compat/librdkafka-src.tar.gz``
(or ``LIBRDKAFKA_SRC``) into ``.cache/`` (``kavka.tools.compat_build``; the
first build takes about three minutes on two cores, later runs reuse it).
Each test here is in ``tests/compat/librdkafka-allowlist.txt`` (expected to
pass); each runs in its own ``test-runner`` process, as ``make compat`` runs
it. Skipped, with where to put it, only when the librdkafka source is absent.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kavka.tools.compat import (
    DEFAULT_ALLOWLIST,
    PASS,
    RunContext,
    is_broker_test,
    read_allowlist,
    run_number,
    start_cluster,
    start_secured_cluster,
    suite_tests,
)
from kavka.tools.compat_build import Runner, SourceMissing, build, locate_source

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# Fast and broad (about a minute of runner time): produce and delivery
# reports, per-record errors and IncrementalAlterConfigs (0011), consume,
# seek and offsets, group commits including one to a partition that does not
# exist (0030), CreatePartitions (0044), idempotence (0090), transactions
# read back under read_committed (0129), headers; under the classic group
# protocol, and the group commits (0030) once more under the consumer
# protocol (KIP-848: ConsumerGroupHeartbeat, member epochs as generations).
SMOKE = tuple((name, "classic") for name in (
    "0001_multiobj", "0011_produce_batch", "0012_produce_consume", "0015_offsets_seek", "0030_offset_commit",
    "0044_partition_cnt", "0073_headers", "0090_idempotence", "0129_fetch_aborted_msgs")) + (
    ("0030_offset_commit", "consumer"),)
# On a one-broker secured cluster (SASL_SSL, SCRAM): a wrong password
# refused, then sasl_set_credentials() with the right one accepted.
SECURED_SMOKE = (("0135_sasl_credentials", "classic"),)
TIMEOUT_S = 240.0


@pytest.fixture(scope="module")
def runner() -> Runner:
    try:
        source = locate_source()
    except SourceMissing as e:
        pytest.skip(str(e))
    return build(source)


@pytest.fixture(scope="module")
def context(runner: Runner) -> Iterator[RunContext]:
    out = Path(tempfile.mkdtemp(prefix="kavka-compat-smoke-"))
    (out / "logs").mkdir()
    cluster = start_cluster(runner.tests_dir / "scenarios" / "default.json", out / "cluster", lambda m: None)
    try:
        yield RunContext(runner, out, TIMEOUT_S, {"default": cluster.bootstrap}, say=lambda m: None)
    finally:
        cluster.cleanup()


@pytest.fixture(scope="module")
def secured_context(runner: Runner) -> Iterator[RunContext]:
    out = Path(tempfile.mkdtemp(prefix="kavka-compat-smoke-secured-"))
    (out / "logs").mkdir()
    cluster, scenario = start_secured_cluster(runner.tests_dir / "scenarios" / "default.json", out / "cluster",
                                              lambda m: None, brokers=1)
    try:
        yield RunContext(runner, out, TIMEOUT_S, say=lambda m: None, secured=scenario)
    finally:
        cluster.cleanup()
        shutil.rmtree(out / "cluster", ignore_errors=True)  # keys and passwords


def test_smoke_tests_are_allowlisted():
    allowed = {(e.test, e.protocol) for e in read_allowlist(DEFAULT_ALLOWLIST)}
    assert [(t, p) for t, p in SMOKE + SECURED_SMOKE if (t, p) not in allowed] == []


@pytest.mark.parametrize(("name", "protocol"), SMOKE)
def test_librdkafka_suite(context: RunContext, name: str, protocol: str):
    run_one(context, name, protocol)


@pytest.mark.parametrize(("name", "protocol"), SECURED_SMOKE)
def test_librdkafka_suite_secured(secured_context: RunContext, name: str, protocol: str):
    run_one(secured_context, name, protocol)


def run_one(context: RunContext, name: str, protocol: str) -> None:
    tests = [t for t in suite_tests(context.runner.tests_dir) if t.name == name]
    assert tests and is_broker_test(tests[0]), f"{name} is not a broker test of this librdkafka"
    [result] = run_number(context, tests[0].number, tests, protocol)
    log = context.out_dir / "logs" / f"{tests[0].number}-{protocol}.log"
    assert result.result == PASS, f"{name}: {result.result} {result.reason} (runner output: {log})"
