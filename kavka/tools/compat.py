"""``python -m kavka.tools.compat``: librdkafka's integration suite against a
local Kavka cluster (``make compat``).

librdkafka (the C client under confluent-kafka and kcat) ships about a
hundred integration tests written against Apache Kafka; each runs against
any cluster named in its ``test.conf``. This driver:

1. builds the suite's ``test-runner`` (``kavka.tools.compat_build``: cached
   under ``.cache/``, offline);
2. reads the list of tests from the suite itself (the ``_TEST(...)`` table
   in ``tests/test.c``) and keeps the broker tests: mock-cluster tests,
   unit tests (``0000``, ``_ut``), local tests (``TEST_F_LOCAL``) and the
   manual 8000 series need no broker and are left out;
3. starts a local cluster with the suite's scenario (``tests/scenarios``:
   ``default`` is 3 brokers, topic auto-creation, 4 partitions, replication
   factor 3; each broker in rack ``RACK<id>`` with the rack-aware replica
   selector, as trivup sets them up; tests of the ``noautocreate`` scenario
   get a second cluster with auto-creation off);
4. runs each test number in its own ``test-runner`` process
   (``TESTS=NNNN ./test-runner -p1 -Q -E -L``, ``TEST_KAFKA_VERSION``,
   ``TEST_CONSUMER_GROUP_PROTOCOL``) with a timeout, and reads each named
   test's PASSED/FAILED/SKIPPED, reason and seconds from the runner's
   summary table;
5. writes ``<out>/compat-<protocol>.md`` and ``.tsv`` (test, protocol,
   result, seconds, reason), the runner output of each test under
   ``<out>/logs/``, and prints a summary line per protocol.

The suite's SSL and SASL broker tests (0097, 0135, 0142) run against a
second, secured cluster (``kavka.tools.compat_secure``: ``SASL_SSL`` with
SCRAM, client certificates, KIP-368 session lifetimes) with the
``test.conf`` and ``SSL_*`` variables trivup would give them; 0142, whose
sub-tests are none of them quick, runs each sub-test Kafka 3.9 can pass in
full mode (``SUBTESTS=``), one process each. A test needing a librdkafka
feature the build lacks (its ``BUILT_WITH``) is skipped naming it.

Tests that drive Kafka's own command-line tools or Java client
(``KAFKA_PATH``) are listed as skipped with that reason without being run;
``-E`` leaves out the sockem (simulated network fault) tests, listed the
same way.

With ``--allowlist FILE`` (``tests/compat/librdkafka-allowlist.txt``) the
exit code is 1 when an allowlisted test did not pass; ``--only-allowlist``
runs just those tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kavka.common.broker_config_keys import RACK_AWARE_REPLICA_SELECTOR
from kavka.tools.cluster import LocalCluster
from kavka.tools.compat_build import REPO_ROOT, BuildFailed, Runner, SourceMissing, build, locate_source
from kavka.tools.compat_secure import REAUTH_MS, SecuredScenario, secured_scenario

DEFAULT_ALLOWLIST = REPO_ROOT / "tests" / "compat" / "librdkafka-allowlist.txt"
PROTOCOLS = ("classic", "consumer")
# The Kafka version the suite is told it runs against: features newer than
# it are skipped by the suite itself (share groups are 4.2).
KAFKA_VERSION = "3.9.0"
TIMEOUT_MULTIPLIER = 3

# Tests skipped here, with why (the suite's own list of what each needs).
NEEDS_KAFKA_PATH = {"0052", "0077", "0109", "0115", "0119"}
# Its first half produces with Kafka's Java client (TransactionProducerCli,
# built against KAFKA_PATH) and fails without it before the second half runs.
NEEDS_KAFKA_JAVA = {"0098"}
# The SSL and SASL broker tests: run on the secured cluster. (0128, 0133
# and 0134 are local tests, TEST_F_LOCAL, left out with the others.)
SECURED = {"0097", "0135", "0142"}
SECURED_SCENARIO = "secured"
# librdkafka features (its BUILT_WITH) a test needs of the build: 0064 checks
# that rd_kafka_new() fails on a bad ssl.ca.location.
NEEDS_FEATURES: dict[str, tuple[str, ...]] = {
    "0064": ("SSL",), "0097": ("SSL",), "0135": ("SSL", "SASL_SCRAM"), "0142": ("SSL", "SASL_SCRAM")}
# Tests whose sub-tests are none of them quick (-Q would run nothing) run in
# full mode, one process per sub-test named here (the runner's SUBTESTS= is
# one substring of "function:line: title"). 0142's other sub-tests are left
# out: do_test_share_consumer, do_test_share_oauthbearer and
# do_test_share_reauth_failure use KIP-932 share groups (Kafka 4.2; Apache
# Kafka 3.9, the version the suite is told, has none), do_test_oauthbearer
# needs sasl.mechanism=OAUTHBEARER (the secured cluster offers SCRAM).
FULL_MODE_SUBTESTS: dict[str, tuple[str, ...]] = {
    "0142": ("do_test_consumer", "do_test_producer", "do_test_txn_producer", "do_test_reauth_failure")}
FULL_MODE_LEFT_OUT: dict[str, str] = {
    "0142": "not run: share-consumer sub-tests (KIP-932 share groups, Kafka 4.2, not in 3.9) and "
            "do_test_oauthbearer (needs OAUTHBEARER; this cluster offers SCRAM)"}

TEST_FLAG_LOCAL = "TEST_F_LOCAL"
TEST_FLAG_MANUAL = "TEST_F_MANUAL"
TEST_FLAG_SOCKEM = "TEST_F_SOCKEM"

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True, slots=True)
class SuiteTest:
    """One ``_TEST(name, flags, ...)`` entry of the suite."""

    name: str  # e.g. 0045_subscribe_update
    flags: str  # the flags expression as written, e.g. "TEST_F_LOCAL"
    scenario: str = "default"

    @property
    def number(self) -> str:
        return self.name[:4]


@dataclass(slots=True)
class Result:
    test: str
    protocol: str
    result: str  # PASS, FAIL or SKIP
    seconds: float
    reason: str = ""


@dataclass(slots=True)
class AllowEntry:
    test: str
    protocol: str
    why: str


def _entries(text: str) -> Iterable[str]:
    """The argument text of every ``_TEST(...)`` in the tests[] table."""
    start = text.index("struct test tests[]")
    i = start
    while True:
        i = text.find("_TEST(", i)
        if i < 0:
            return
        j = i + len("_TEST(")
        depth = 1
        k = j
        while depth:
            c = text[k]
            depth += c == "("
            depth -= c == ")"
            k += 1
        yield text[j:k - 1]
        i = k


def suite_tests(tests_dir: Path) -> list[SuiteTest]:
    """Every test the suite defines, in its order (from ``tests/test.c``)."""
    out = []
    for args in _entries((tests_dir / "test.c").read_text(errors="replace")):
        if args.startswith("NAME"):  # the macro's own definition
            continue
        parts = [p.strip() for p in args.split(",")]
        scenario = re.search(r'\.scenario\s*=\s*"([^"]*)"', args)
        out.append(SuiteTest(parts[0], parts[1] if len(parts) > 1 else "0",
                             scenario.group(1).split(",")[0] if scenario else "default"))
    return out


def is_broker_test(t: SuiteTest) -> bool:
    n = t.name
    return not (TEST_FLAG_LOCAL in t.flags or TEST_FLAG_MANUAL in t.flags or "mock" in n or n.endswith("_ut")
                or "_ut_" in n or n.startswith("0000") or n.startswith("8") or n.endswith("_local"))


def not_run_notes(wanted: Sequence[str], tests: Sequence[SuiteTest]) -> list[str]:
    """A line for each asked-for test (number or name) that is no broker
    test of the suite, or no test at all: it gets no row in the table."""
    notes = []
    for w in wanted:
        matching = [t for t in tests if w in (t.number, t.name)]
        if not matching:
            notes.append(f"{w}: no such test in this librdkafka's tests/test.c")
        elif not any(is_broker_test(t) for t in matching):
            notes.append(f"{w}: {', '.join(t.name for t in matching)} needs no broker (local, mock or unit test: "
                         f"{', '.join(sorted({t.flags for t in matching}))}), not run here")
    return notes


def skip_reason(t: SuiteTest, built_with: frozenset[str] | None = None) -> str | None:
    """Why this broker test is not run here, or None. ``built_with``: the
    build's features (None: not known, assumed enough)."""
    if t.number in NEEDS_KAFKA_PATH:
        return "drives Kafka's own CLI tools (KAFKA_PATH)"
    if t.number in NEEDS_KAFKA_JAVA:
        return "produces with Kafka's Java client (TransactionProducerCli, KAFKA_PATH)"
    missing = [f for f in NEEDS_FEATURES.get(t.number, ()) if built_with is not None and f not in built_with]
    if missing:
        return f"needs a librdkafka built with {', '.join(missing)} (not in this build's BUILT_WITH)"
    if TEST_FLAG_SOCKEM in t.flags:
        return "sockem test (simulated network faults), left out by -E"
    return None


def parse_summary(output: str) -> dict[str, tuple[str, float, str]]:
    """name -> (PASS/FAIL/SKIP, seconds, reason) from the runner's summary table
    (``| 0001_multiobj | PASSED | 1.234s | reason``)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    states = {"PASSED": PASS, "FAILED": FAIL, "SKIPPED": SKIP}
    out: dict[str, tuple[str, float, str]] = {}
    row = re.compile(r"^\|\s*(\d{4}\w*)\s*\|\s*([A-Z]+)\s*\|\s*([\d.]+)s\s*\|\s*(.*)$")
    for line in plain.splitlines():
        m = row.match(line.strip())
        if m and m.group(2) in states:
            out[m.group(1)] = (states[m.group(2)], float(m.group(3)), m.group(4).strip())
        elif m:  # RUNNING / NOT STARTED: the runner gave up on it
            out[m.group(1)] = (FAIL, float(m.group(3)), f"runner state {m.group(2)} {m.group(4).strip()}".strip())
    return out


def subtests_passed(output: str) -> dict[str, int]:
    """test name -> sub-tests that passed (``[0045_x / 1.2s] [ do_test:123: PASS (1.00s) ]``)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    out: dict[str, int] = {}
    for m in re.finditer(r"^\[(\d{4}\w*)\s*/[^]]*\]\s*\[ .*: PASS \(", plain, re.M):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def uses_subtests(tests_dir: Path, number: str) -> bool:
    """Whether the test's source is split in sub-tests (SUB_TEST / SUB_TEST_QUICK)."""
    return any("SUB_TEST" in f.read_text(errors="replace") for f in tests_dir.glob(f"{number}-*.c*"))


def failure_hint(output: str) -> str:
    """The first failure of a runner output without a summary (an abort, a
    timeout): the runner's ``### Test ... failed at FILE:LINE`` and the
    assertion under it, else the last line."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    lines = [ln.strip() for ln in plain.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        m = re.match(r'### Test "([^"]*)" failed at (\S+)', line)
        if m:
            detail = lines[i + 1] if i + 1 < len(lines) else ""
            return f"{m.group(1)} at {m.group(2).rstrip(':')}: {detail}"[:400]
    return lines[-1][:300] if lines else ""


@dataclass
class RunContext:
    runner: Runner
    out_dir: Path
    timeout: float
    bootstraps: dict[str, str] = field(default_factory=dict)  # scenario -> bootstrap.servers
    say: Callable[[str], None] = print
    secured: SecuredScenario | None = None  # the secured cluster's test.conf and SSL_* variables


def test_conf_text(bootstrap: str) -> str:
    return f"bootstrap.servers={bootstrap}\ntest.timeout.multiplier={TIMEOUT_MULTIPLIER}\n"


def scenario_of(t: SuiteTest) -> str:
    """The cluster a test runs against: the secured one for the SSL and
    SASL tests, else the suite's scenario."""
    return SECURED_SCENARIO if t.number in SECURED else t.scenario


def _run_process(ctx: RunContext, number: str, protocol: str, scenario: str, suite_scenario: str, log: Path, *,
                 quick: bool, subtest: str | None) -> tuple[int | None, str, float]:
    """One ``test-runner`` process against the cluster of ``scenario``: its
    exit code (None: timed out), output and seconds. ``suite_scenario`` is the
    test's own (``TEST_SCENARIO``: the runner skips tests of another)."""
    conf = ctx.out_dir / f"test-{scenario}.conf"
    extra: dict[str, str] = {}
    if scenario == SECURED_SCENARIO:
        if ctx.secured is None:
            raise RuntimeError(f"test {number} needs the secured cluster, which this run did not start")
        conf.write_text(ctx.secured.test_conf)
        os.chmod(conf, 0o600)  # holds a password
        extra.update(ctx.secured.environment)
    else:
        conf.write_text(test_conf_text(ctx.bootstraps[scenario]))
    if subtest is not None:
        extra["SUBTESTS"] = subtest
    env = dict(os.environ, TESTS=number, TEST_KAFKA_VERSION=KAFKA_VERSION,
               TEST_CONSUMER_GROUP_PROTOCOL=protocol, RDKAFKA_TEST_CONF=str(conf),
               TEST_SCENARIO=suite_scenario, LD_LIBRARY_PATH=ctx.runner.library_path, **extra)
    args = [str(ctx.runner.runner), "-p1", *(["-Q"] if quick else []), "-E", "-L"]
    start = time.monotonic()
    with log.open("w") as f:
        proc = subprocess.Popen(args, cwd=ctx.runner.tests_dir, env=env, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc: int | None = proc.wait(ctx.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    return rc, log.read_text(errors="replace"), time.monotonic() - start


def results_of(names: Sequence[SuiteTest], protocol: str, output: str, rc: int | None, seconds: float,
               timeout: float, split: bool, mode: str = "quick mode (-Q)") -> list[Result]:
    """Each named test's result from one runner output (``split``: the
    test is made of sub-tests, so passing without running one is vacuous)."""
    summary = parse_summary(output)
    subtests = subtests_passed(output)
    results = []
    for t in names:
        if t.name in summary:
            state, secs, reason = summary[t.name]
            if state == PASS and split and not subtests.get(t.name):
                reason = f"vacuous: no sub-test of it runs in {mode}"
            results.append(Result(t.name, protocol, state, secs, reason))
        elif rc is None:
            results.append(Result(t.name, protocol, FAIL, seconds,
                                  f"timed out after {timeout:.0f} s ({failure_hint(output)})"))
        else:
            results.append(Result(t.name, protocol, FAIL, seconds,
                                  f"runner exited {rc} without a result ({failure_hint(output)})"))
    return results


def combine_subtest_runs(test: str, protocol: str, runs: Sequence[tuple[str, Result]], left_out: str) -> Result:
    """One result from the full-mode runs of a test's sub-tests (sub-test
    name, its result): the first failure, else a skip (the test skipped
    itself), else a pass naming what ran and what did not."""
    seconds = sum(r.seconds for _, r in runs)
    for sub, r in runs:
        if r.result == FAIL:
            return Result(test, protocol, FAIL, seconds, f"sub-test {sub}: {r.reason}".rstrip(": "))
    for _, r in runs:
        if r.result == SKIP:
            return Result(test, protocol, SKIP, seconds, r.reason)
    vacuous = [sub for sub, r in runs if r.reason.startswith("vacuous")]
    if vacuous:
        return Result(test, protocol, PASS, seconds, f"vacuous: sub-test(s) {', '.join(vacuous)} ran nothing")
    ran = ", ".join(sub for sub, _ in runs)
    return Result(test, protocol, PASS, seconds, f"full mode, sub-tests {ran}; {left_out}".rstrip("; "))


def run_number(ctx: RunContext, number: str, names: Sequence[SuiteTest], protocol: str) -> list[Result]:
    """The ``test-runner`` process(es) for every named test of ``number``."""
    scenario = scenario_of(names[0])
    split = uses_subtests(ctx.runner.tests_dir, number)
    subs = FULL_MODE_SUBTESTS.get(number)
    if subs is None:
        log = ctx.out_dir / "logs" / f"{number}-{protocol}.log"
        rc, output, seconds = _run_process(ctx, number, protocol, scenario, names[0].scenario, log, quick=True, subtest=None)
        return results_of(names, protocol, output, rc, seconds, ctx.timeout, split)
    per_test: dict[str, list[tuple[str, Result]]] = {t.name: [] for t in names}
    for sub in subs:
        log = ctx.out_dir / "logs" / f"{number}-{protocol}-{sub}.log"
        rc, output, seconds = _run_process(ctx, number, protocol, scenario, names[0].scenario, log, quick=False, subtest=sub)
        for r in results_of(names, protocol, output, rc, seconds, ctx.timeout, split, f"full mode as {sub}"):
            per_test[r.test].append((sub, r))
    return [combine_subtest_runs(t.name, protocol, per_test[t.name], FULL_MODE_LEFT_OUT.get(number, ""))
            for t in names]


def scenario_config(scenario_file: Path, brokers: int = 3) -> dict[str, str]:
    """The broker keys of the suite's trivup scenario."""
    # The scenario files are trivup's dicts, with a trailing comma JSON refuses.
    scenario = json.loads(re.sub(r",\s*}", "}", scenario_file.read_text()))
    return {
        "auto.create.topics.enable": str(scenario.get("auto_create_topics", "true")).lower(),
        "num.partitions": str(scenario.get("num_partitions", 1)),
        "default.replication.factor": str(min(int(scenario.get("replication_factor", 3)), brokers)),
        # trivup's brokers run Kafka's ACL authorizer (0081 creates, lists
        # and deletes ACLs and expects an authorizer); with no ACL on a
        # resource everyone is allowed, so the other tests run unhindered.
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        # trivup gives each broker of Kafka >= 2.4 the rack RACK<id> and the
        # rack-aware replica selector (KIP-392): 0101 reads from the
        # follower in its client.rack and skips when the racks are not so.
        "replica.selector.class": RACK_AWARE_REPLICA_SELECTOR,
    }


def trivup_racks(brokers: int) -> list[str]:
    """trivup's racks: RACK<id> per broker (Kafka >= 2.4)."""
    return [f"RACK{i}" for i in range(brokers)]


def start_cluster(scenario_file: Path, data_dir: Path, say: Callable[[str], None]) -> LocalCluster:
    """A 3-broker cluster configured as the suite's trivup scenario asks."""
    brokers = 3
    config = scenario_config(scenario_file, brokers)
    racks = trivup_racks(brokers)
    say(f"cluster {scenario_file.stem}: {brokers} brokers, racks {racks}, "
        + ", ".join(f"{k}={v}" for k, v in config.items()))
    cluster = LocalCluster(brokers, data_dir, 0, None, None, config, racks=racks)
    cluster.start(progress=lambda m: say(f"  {m}"))
    return cluster


def start_secured_cluster(scenario_file: Path, data_dir: Path, say: Callable[[str], None],
                          brokers: int = 3) -> tuple[LocalCluster, SecuredScenario]:
    """The suite's scenario on ``kavka up --secure``'s listeners (SASL_SSL
    with SCRAM, SSL with client certificates), sessions lasting
    ``REAUTH_MS`` (KIP-368), and the test.conf and files for it."""
    config = scenario_config(scenario_file, brokers)
    config["connections.max.reauth.ms"] = str(REAUTH_MS)
    say(f"cluster {SECURED_SCENARIO} ({scenario_file.stem} secured): {brokers} brokers, SASL_SSL (SCRAM) and SSL "
        "(client certificates) listeners, " + ", ".join(f"{k}={v}" for k, v in config.items()))
    cluster = LocalCluster(brokers, data_dir, 0, None, None, config, secure=True, racks=trivup_racks(brokers))
    try:
        cluster.start(progress=lambda m: say(f"  {m}"))
        assert cluster.secure is not None
        scenario = secured_scenario(cluster.secure, cluster.bootstrap, data_dir / "client-files", TIMEOUT_MULTIPLIER)
    except BaseException:
        cluster.cleanup()
        raise
    return cluster, scenario


def read_allowlist(path: Path) -> list[AllowEntry]:
    """``test protocol why...`` per line; ``#`` comments. protocol: classic, consumer or both."""
    out = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[1] not in (*PROTOCOLS, "both"):
            raise ValueError(f"{path}:{lineno}: expected 'TEST PROTOCOL WHY' with PROTOCOL classic, consumer "
                             f"or both, got {line!r}")
        for proto in PROTOCOLS if parts[1] == "both" else (parts[1],):
            out.append(AllowEntry(parts[0], proto, parts[2]))
    return out


def table_markdown(results: Sequence[Result]) -> str:
    lines = ["| test | protocol | result | seconds | reason |", "|---|---|---|---:|---|"]
    for r in results:
        reason = r.reason.replace("|", "\\|")
        lines.append(f"| {r.test} | {r.protocol} | {r.result} | {r.seconds:.1f} | {reason} |")
    return "\n".join(lines) + "\n"


def table_tsv(results: Sequence[Result]) -> str:
    rows = ["test\tprotocol\tresult\tseconds\treason"]
    rows += [f"{r.test}\t{r.protocol}\t{r.result}\t{r.seconds:.1f}\t{r.reason}" for r in results]
    return "\n".join(rows) + "\n"


def summary_line(protocol: str, results: Sequence[Result]) -> str:
    counts = {k: sum(r.result == k for r in results) for k in (PASS, FAIL, SKIP)}
    return (f"librdkafka suite, group protocol {protocol}: {len(results)} broker tests, "
            f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped")


def check_allowlist(entries: Sequence[AllowEntry], results: Sequence[Result]) -> list[str]:
    """One line per allowlisted test that did not pass."""
    by = {(r.test, r.protocol): r for r in results}
    bad = []
    for e in entries:
        r = by.get((e.test, e.protocol))
        if r is None:
            bad.append(f"{e.test} ({e.protocol}): allowlisted but not run")
        elif r.result != PASS:
            bad.append(f"{e.test} ({e.protocol}): {r.result} {r.reason}")
    return bad


def run_suite(runner: Runner, protocols: Sequence[str], out_dir: Path, *, timeout: float,
              select: Callable[[SuiteTest, str], bool] = lambda t, p: True,
              say: Callable[[str], None] = print) -> list[Result]:
    """Run the selected broker tests under each protocol; write the tables."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "logs").mkdir(exist_ok=True)
    tests = [t for t in suite_tests(runner.tests_dir) if is_broker_test(t)]
    built_with = runner.built_with()
    ctx = RunContext(runner, out_dir, timeout, say=say)
    clusters: dict[str, LocalCluster] = {}
    all_results: list[Result] = []
    try:
        for protocol in protocols:
            results: list[Result] = []
            chosen = [t for t in tests if select(t, protocol)]
            by_number: dict[str, list[SuiteTest]] = {}
            for t in chosen:
                reason = skip_reason(t, built_with)
                if reason:
                    results.append(Result(t.name, protocol, SKIP, 0.0, reason))
                else:
                    by_number.setdefault(f"{t.number}/{scenario_of(t)}", []).append(t)
            for i, (key, names) in enumerate(by_number.items(), 1):
                scenario = scenario_of(names[0])
                if scenario not in clusters:
                    data_dir = Path(tempfile.mkdtemp(prefix=f"kavka-compat-{scenario}-"))
                    if scenario == SECURED_SCENARIO:
                        clusters[scenario], ctx.secured = start_secured_cluster(
                            runner.tests_dir / "scenarios" / "default.json", data_dir, say)
                    else:
                        clusters[scenario] = start_cluster(runner.tests_dir / "scenarios" / f"{scenario}.json",
                                                           data_dir, say)
                    ctx.bootstraps[scenario] = clusters[scenario].bootstrap
                say(f"[{protocol} {i}/{len(by_number)}] {key.split('/')[0]} "
                    f"({', '.join(t.name for t in names)}) ...")
                got = run_number(ctx, key.split("/")[0], names, protocol)
                for r in got:
                    say(f"    {r.test}: {r.result} {r.seconds:.1f} s {r.reason}".rstrip())
                results.extend(got)
            order = {t.name: i for i, t in enumerate(tests)}
            results.sort(key=lambda r: order[r.test])
            (out_dir / f"compat-{protocol}.md").write_text(
                f"{summary_line(protocol, results)}\n\n{table_markdown(results)}")
            (out_dir / f"compat-{protocol}.tsv").write_text(table_tsv(results))
            all_results.extend(results)
    finally:
        for scenario, c in clusters.items():
            c.cleanup()
            if scenario == SECURED_SCENARIO:
                # its keys, keystore password and users' passwords go with it
                shutil.rmtree(c.data_dir, ignore_errors=True)
    return all_results


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--src", help="librdkafka source tarball or tree (default: $LIBRDKAFKA_SRC, else "
                                 "../shared/compat/librdkafka-src.tar.gz next to the repository)")
    p.add_argument("--protocol", choices=(*PROTOCOLS, "both"), default="both",
                   help="TEST_CONSUMER_GROUP_PROTOCOL to run under (default both, classic first)")
    p.add_argument("--tests", help="comma-separated test numbers or names to run (default: every broker test)")
    p.add_argument("--allowlist", default=str(DEFAULT_ALLOWLIST),
                   help="exit 1 when a test listed here did not pass (default tests/compat/librdkafka-allowlist.txt; "
                        "'' for none)")
    p.add_argument("--only-allowlist", action="store_true", help="run only the allowlisted tests")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per test process (default 600)")
    p.add_argument("--out", default=str(REPO_ROOT / ".cache" / "compat-results"),
                   help="directory for the tables and logs (default .cache/compat-results)")
    p.add_argument("--build-only", action="store_true", help="build the test runner and stop")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kavka.tools.compat", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args(argv)

    def say(msg: str) -> None:
        print(msg, flush=True)

    try:
        runner = build(locate_source(args.src), say=say)
    except SourceMissing as e:
        print(f"compat: {e}", file=sys.stderr)
        return 2
    except BuildFailed as e:
        print(f"compat: build failed: {e}", file=sys.stderr)
        return 1
    say(f"test runner: {runner.runner}" + (f" (built in {runner.build_seconds:.0f} s)" if runner.build_seconds else
                                           " (cached build)"))
    if args.build_only:
        return 0
    try:
        allow = read_allowlist(Path(args.allowlist)) if args.allowlist else []
    except (OSError, ValueError) as e:
        print(f"compat: allowlist: {e}", file=sys.stderr)
        return 2
    protocols = PROTOCOLS if args.protocol == "both" else (args.protocol,)
    wanted = [w.strip() for w in args.tests.split(",")] if args.tests else None
    allowed = {(e.test, e.protocol) for e in allow}

    def select(t: SuiteTest, protocol: str) -> bool:
        if args.only_allowlist and (t.name, protocol) not in allowed:
            return False
        return wanted is None or t.number in wanted or t.name in wanted

    for note in not_run_notes(wanted or [], suite_tests(runner.tests_dir)):
        say(f"compat: {note}")
    results = run_suite(runner, protocols, Path(args.out), timeout=args.timeout, select=select, say=say)
    for proto in protocols:
        say(summary_line(proto, [r for r in results if r.protocol == proto]))
    say(f"tables: {args.out}/compat-<protocol>.md and .tsv")
    run_keys = {(r.test, r.protocol) for r in results}
    bad = check_allowlist([e for e in allow if (e.test, e.protocol) in run_keys or wanted is None
                           and e.protocol in protocols], results)
    for line in bad:
        print(f"compat: allowlisted test did not pass: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
