"""The web console in a real browser (Debian's headless chromium through
Playwright) against a real 3-broker cluster: every page clicked through,
the changes made from the pages checked on the cluster, and the bad input
of each form refused in words with nothing changed.

One cluster, one console process and one browser for the module; the tests
run in order (the module is one xdist work unit) and build on each other.
"""

from __future__ import annotations

import json
import uuid

import pytest
from playwright.sync_api import expect

from kavka.tools.cluster import LocalCluster
from tests.cluster.cluster_helpers import create_topic, produce

from .browser import Browser, ConsoleProcess, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

TOPIC = "orders"
GROUP = "billing"
WAIT = 60_000  # ms: cluster-level events under a loaded CI machine
DEAD_METRICS_URL = "http://127.0.0.1:1/metrics"


@pytest.fixture(scope="module")
def env(zookeeper, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("console")
    cluster = LocalCluster(3, tmp / "cluster", zookeeper=f"{zookeeper}/kavka-console-{uuid.uuid4().hex[:8]}",
                           config={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                   "super.users": "User:ANONYMOUS", "offsets.topic.num.partitions": "3",
                                   # a broker paused for the in-progress move keeps its registration
                                   "zookeeper.session.timeout.ms": "120000",
                                   "auto.leader.rebalance.enable": "false"})
    console = browser = None
    try:
        cluster.start()
        # Every broker's Prometheus endpoint, and one nobody answers.
        urls = [a for u in [*cluster.metrics_urls, DEAD_METRICS_URL] for a in ("--metrics-url", u)]
        console = ConsoleProcess(cluster.bootstrap, *urls, "--metrics-interval", "1", log_dir=tmp)
        browser = Browser(tmp)
        yield cluster, console, browser
    finally:
        if browser is not None:
            browser.close()
        if console is not None:
            console.stop()
        cluster.stop()


def go(env, path: str):
    _cluster, console, browser = env
    browser.page.goto(console.url + path)
    return browser.page


def submit(page, form: str, fields: dict[str, str], button: str | None = None) -> None:
    if page.locator(form).count() == 0:
        raise AssertionError(f"no form {form} on {page.url}: {page.locator('main').inner_text()[:1000]}")
    for name, value in fields.items():
        field = page.locator(f"{form} [name={name}]").first
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        elif field.get_attribute("type") == "checkbox":
            field.set_checked(value == "1")
        else:
            field.fill(value)
    page.locator(f"{form} button[type=submit]" if button is None else button).first.click()
    page.wait_for_load_state()


def admin(cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def test_overview_shows_every_broker_and_the_health(env):
    cluster, _console, browser = env
    page = go(env, "/")
    for b in cluster.brokers:
        expect(page.locator(f"#broker-{b} .state")).to_have_text("up")
    controller = page.locator("#controller").inner_text()
    expect(page.locator(f"#broker-{controller}")).to_contain_text("controller")
    expect(page.locator("#urp")).to_have_text("0")
    expect(page.locator("#offline-count")).to_have_text("0")
    # Live refresh: the script replaces the block without a reload.
    wait_for(lambda: page.locator("#live").get_attribute("data-refreshed-at"), 20, "a live refresh")
    browser.shot("overview")


def test_create_a_topic_from_the_page(env):
    cluster, _console, browser = env
    page = go(env, "/topics")
    submit(page, "#create-topic", {"name": TOPIC, "partitions": "3", "replication_factor": "2",
                                    "configs": "retention.ms=3600000"})
    expect(page.locator("#notice")).to_contain_text(f"Created topic {TOPIC}")
    expect(page.locator("#partitions tbody tr")).to_have_count(3)
    expect(page.locator("#config-retention\\.ms .value")).to_have_text("3600000")
    expect(page.locator("#config-retention\\.ms .source")).to_have_text("topic")
    md = admin(cluster).list_topics(TOPIC, timeout=10).topics[TOPIC]
    assert len(md.partitions) == 3 and all(len(p.replicas) == 2 for p in md.partitions.values())
    browser.shot("topic")
    page = go(env, "/topics")
    expect(page.locator(f"#topic-{TOPIC}")).to_contain_text("3")
    browser.shot("topics")


def test_bad_topic_input_is_refused_in_words(env):
    cluster, _console, browser = env
    page = go(env, "/topics/no-such-topic")
    expect(page.locator("#error")).to_contain_text("topic 'no-such-topic' does not exist")
    assert "Traceback" not in page.content()
    page = go(env, "/topics")
    submit(page, "#create-topic", {"name": "bad name!", "partitions": "1", "replication_factor": "1"})
    expect(page.locator("#error")).to_contain_text("characters Kafka does not allow")
    submit(page, "#create-topic", {"name": "too-wide", "partitions": "1", "replication_factor": "5"})
    expect(page.locator("#error")).to_contain_text("INVALID_REPLICATION_FACTOR")
    assert "too-wide" not in admin(cluster).list_topics(timeout=10).topics
    page = go(env, f"/topics/{TOPIC}")
    submit(page, "#set-config", {"key": "retention.ms", "value": "soon"})
    expect(page.locator("#error")).to_contain_text("Config not changed")
    expect(page.locator("#error")).to_contain_text("retention.ms")
    expect(page.locator("#config-retention\\.ms .value")).to_have_text("3600000")
    submit(page, "#set-config", {"key": "retention.ms", "value": "7200000"})
    expect(page.locator("#notice")).to_contain_text("Set retention.ms=7200000")
    expect(page.locator("#config-retention\\.ms .value")).to_have_text("7200000")
    submit(page, "#delete-topic", {"confirm": "wrong"})
    expect(page.locator("#error")).to_contain_text("type the topic's name")
    browser.shot("topic-bad-input")


def test_produce_from_the_page_and_find_the_record_by_key(env):
    _cluster, _console, browser = env
    page = go(env, f"/topics/{TOPIC}/messages")
    for i in range(5):
        submit(page, "#produce", {"key": f"filler-{i}", "value": f"plain {i}", "headers": ""})
    submit(page, "#produce", {"key": "needle", "value": json.dumps({"order": 42, "items": ["a"]}),
                              "headers": "trace=abc\nsource=console"})
    expect(page.locator("#notice")).to_contain_text("Produced to partition")
    page = go(env, f"/topics/{TOPIC}/messages?key=needle&decode=json")
    rows = page.locator("#records tr.record")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".key")).to_contain_text("needle")
    expect(rows.first.locator(".value pre")).to_have_text(json.dumps({"order": 42, "items": ["a"]}, indent=2))
    expect(rows.first.locator(".headers")).to_contain_text("trace=abc")
    browser.shot("messages")
    page = go(env, f"/topics/{TOPIC}/messages?header=trace%3Dabc&decode=hex")
    expect(page.locator("#records tr.record")).to_have_count(1)
    expect(page.locator("#records tr.record .key")).to_contain_text("6e 65 65 64 6c 65")  # "needle"
    page = go(env, f"/topics/{TOPIC}/messages?partition=0,2&start=timestamp&at=1970-01-01T00:00:00")
    expect(page.locator("#browse-summary")).to_contain_text("started at 0:0, 2:0")
    page = go(env, f"/topics/{TOPIC}/messages?value=plain&limit=1&partition=all")
    expect(page.locator("#browse-summary")).to_contain_text("record(s)")
    # Bad input: words, no records changed.
    for query, words in [("start=offset&at=12x", "start offset must be a whole number"),
                         ("start=timestamp&at=yesterday", "start timestamp"),
                         ("partition=9", "partition 9 does not exist")]:
        page = go(env, f"/topics/{TOPIC}/messages?{query}")
        expect(page.locator("#error")).to_contain_text(words)
    submit(page, "#produce", {"key": "k", "value": "v", "partition": "7"})
    expect(page.locator("#error")).to_contain_text("Record not produced")
    browser.shot("messages-bad-input")


def test_pages_forward_and_back_and_transaction_markers(env):
    cluster, _console, browser = env
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "console-test"})
    p.init_transactions(30)
    for committed in (True, False):
        p.begin_transaction()
        for i in range(3):
            p.produce(TOPIC, f"txn {committed} {i}".encode(), partition=1)
        assert p.flush(30) == 0  # on the broker before the outcome (an abort purges what is unsent)
        if committed:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    page = go(env, f"/topics/{TOPIC}/messages?partition=1&start=earliest&limit=2")
    first = page.locator("#records tbody tr").first.locator("td").nth(1).inner_text()
    page.locator("#next").click()
    page.wait_for_load_state()
    expect(page.locator("#records tbody tr").first.locator("td").nth(1)).not_to_have_text(first)
    page.locator("#prev").click()
    page.wait_for_load_state()
    expect(page.locator("#records tbody tr").first.locator("td").nth(1)).to_have_text(first)
    page = go(env, f"/topics/{TOPIC}/messages?partition=1&start=latest&limit=8")
    markers = page.locator("#records tr.control .marker")
    expect(markers).to_have_count(2)
    expect(markers.first).to_have_text("transaction marker: COMMIT")
    expect(markers.last).to_have_text("transaction marker: ABORT")
    browser.shot("messages-transactions")


def _consume(cluster, group: str, count: int, timeout: float = 60.0, close: bool = True):
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 30_000})
    c.subscribe([TOPIC])
    got = 0
    import time
    deadline = time.monotonic() + timeout
    while got < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
            c.commit(m, asynchronous=False)
    assert got == count, f"consumed {got} of {count}"
    if close:
        c.close()
        return None
    return c


def _end_offsets(cluster) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "console-watermarks"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in range(3))
    finally:
        c.close()


def test_a_groups_lag_falls_as_its_consumer_reads_and_offsets_reset(env):
    cluster, _console, browser = env
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(60):
        p.produce(TOPIC, f"order {i}".encode(), key=f"o{i}".encode())
    assert p.flush(30) == 0
    total = _end_offsets(cluster)  # what a group reset to earliest lags by (transaction markers included)
    _consume(cluster, GROUP, 10)
    page = go(env, f"/groups/{GROUP}")
    # Lag counts the partitions the group committed in (the others show "-", as Kafka's tool does).
    expect(page.locator("#lags tbody tr").first).to_be_visible()
    assert int(page.locator("#total-lag").inner_text()) > 0
    consumer = _consume(cluster, GROUP, 60 + 6 + 3 - 10, close=False)  # every committed record
    try:
        # The page refreshes itself: the lag falls to 0 without a reload.
        expect(page.locator("#total-lag")).to_have_text("0", timeout=WAIT)
        browser.shot("group")
        # While the consumer is a member, a reset is refused as Kafka's tool refuses it.
        submit(page, "#reset", {"topic": TOPIC, "to": "earliest"})
        expect(page.locator("#reset-plan")).to_be_visible()
        page.locator("#reset-execute button").click()
        page.wait_for_load_state()
        expect(page.locator("#error")).to_contain_text("only while it has no members")
        submit(page, "#delete-group", {"confirm": GROUP})
        expect(page.locator("#error")).to_contain_text("NON_EMPTY_GROUP")
    finally:
        if consumer is not None:
            consumer.close()
    page = go(env, f"/groups/{GROUP}")
    expect(page.locator("#group-state")).to_have_text("Empty", timeout=WAIT)
    submit(page, "#reset", {"topic": TOPIC, "to": "offset", "at": "abc"})
    expect(page.locator("#error")).to_contain_text("reset offset must be a whole number")
    submit(page, "#reset", {"topic": TOPIC, "to": "earliest"})
    expect(page.locator("#reset-plan .new-offset")).to_have_count(3)
    expect(page.locator("#total-lag")).to_have_text("0")  # a dry run changes nothing
    browser.shot("group-reset-dry-run")
    page.locator("#reset-execute button").click()
    page.wait_for_load_state()
    expect(page.locator("#notice")).to_contain_text(f"Reset group {GROUP}")
    expect(page.locator("#total-lag")).to_have_text(str(total))
    # Dry runs of the other targets: latest and a timestamp past every record are the log ends.
    ends = [page.locator(f"#lag-{TOPIC}-{p} td").nth(3).inner_text() for p in range(3)]
    for target, at in (("latest", ""), ("timestamp", "2999-01-01T00:00:00"), ("offset", "999999")):
        submit(page, "#reset", {"topic": TOPIC, "to": target, "at": at})
        expect(page.locator("#reset-plan .new-offset")).to_have_text(ends)
    submit(page, "#reset", {"topic": TOPIC, "to": "timestamp", "at": "0"})
    expect(page.locator("#reset-plan .new-offset")).to_have_text(["0", "0", "0"])
    expect(page.locator("#total-lag")).to_have_text(str(total))  # still only dry runs
    page = go(env, "/groups")
    expect(page.locator(f"#group-{GROUP}")).to_contain_text("Empty")
    page = go(env, "/groups/no-such-group")
    expect(page.locator("#error")).to_contain_text("does not exist")


def test_run_a_reassignment_from_the_page_and_watch_it_finish(env):
    cluster, _console, browser = env
    md = admin(cluster).list_topics(TOPIC, timeout=10).topics[TOPIC]
    before = {p: tuple(m.replicas) for p, m in md.partitions.items()}
    page = go(env, "/reassign")
    submit(page, "#plan", {"topic": TOPIC, "partitions": "0", "brokers": "0,7"})
    expect(page.locator("#error")).to_contain_text("brokers [7] are not in the cluster")
    submit(page, "#plan", {"topic": TOPIC, "partitions": "0,1,2", "spread": "1"})
    expect(page.locator("#proposed tbody tr")).to_have_count(3)
    # Edit the plan: partition 0 onto the two brokers it is not on first.
    target = [b for b in (0, 1, 2) if b != before[0][0]][:2]
    plan = {"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [9, target[0]]}]}
    page.locator("#execute [name=plan]").fill(json.dumps(plan))
    page.locator("#execute button").click()
    page.wait_for_load_state()
    expect(page.locator("#error")).to_contain_text("names brokers [9]")
    assert {p: tuple(m.replicas) for p, m in admin(cluster).list_topics(TOPIC, timeout=10)
            .topics[TOPIC].partitions.items()} == before
    plan["partitions"][0]["replicas"] = target
    submit(page, "#plan", {"topic": TOPIC, "partitions": "0", "spread": "1"})
    page.locator("#execute [name=plan]").fill(json.dumps(plan))
    page.locator("#execute [name=throttle]").fill("10000000")
    page.locator("#execute button").click()
    page.wait_for_load_state()
    expect(page.locator("#notice")).to_contain_text("Started the reassignment of 1 partition")
    expect(page.locator("#reassign-done")).to_be_visible(timeout=WAIT)
    expect(page.locator("#last-plan .move-status")).to_have_text("completed successfully")
    browser.shot("reassignment")
    assert tuple(admin(cluster).list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0].replicas) == tuple(target)
    page.locator("#unthrottle button").click()
    page.wait_for_load_state()
    expect(page.locator("#notice")).to_contain_text("Removed the replication throttle")
    expect(page.locator("#none-ongoing")).to_be_visible()


def test_a_move_in_progress_is_watched_and_cancelled(env):
    cluster, _console, browser = env
    controller = cluster.controller()
    assert controller is not None
    md = admin(cluster).list_topics(TOPIC, timeout=10).topics[TOPIC]
    # A partition and a broker to add to it that is neither a replica nor the controller.
    p, x = next((p, x) for p, m in sorted(md.partitions.items()) for x in cluster.brokers
                if x not in m.replicas and x != controller[0])
    before = list(md.partitions[p].replicas)
    # The added replica's broker stands still (registered, not copying): the move stays in progress.
    cluster.pause_broker(x)
    try:
        page = go(env, "/reassign")
        submit(page, "#plan", {"topic": TOPIC, "partitions": str(p), "spread": "1"})
        page.locator("#execute [name=plan]").fill(json.dumps(
            {"version": 1, "partitions": [{"topic": TOPIC, "partition": p, "replicas": [*before, x]}]}))
        page.locator("#execute button").click()
        page.wait_for_load_state()
        expect(page.locator("#notice")).to_contain_text("Started the reassignment of 1 partition")
        row = page.locator("#ongoing tbody tr")
        expect(row).to_have_count(1, timeout=WAIT)
        expect(row.locator("td").nth(0)).to_have_text(f"{TOPIC}-{p}")
        expect(row.locator("td").nth(2)).to_have_text(str(x))  # adding
        expect(page.locator("#last-plan .move-status")).to_have_text("is still in progress")
        browser.shot("reassignment-in-progress")
        page.locator("#cancel button").click()
        page.wait_for_load_state()
        expect(page.locator("#notice")).to_contain_text("Cancelled the reassignment of 1 partition")
        expect(page.locator("#none-ongoing")).to_be_visible(timeout=WAIT)
    finally:
        cluster.resume_broker(x)
    wait_for(lambda: list(admin(cluster).list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[p].replicas)
             == before, 60, f"{TOPIC}-{p} back on {before}")


def test_preferred_leader_election(env):
    _cluster, _console, browser = env
    page = go(env, "/elect")
    submit(page, "#elect", {"topic": TOPIC})
    expect(page.locator("#election-summary")).to_contain_text("3 partition(s)")
    expect(page.locator("#all-preferred")).to_be_visible(timeout=WAIT)
    browser.shot("election")


def test_acls_and_scram_users(env):
    _cluster, _console, browser = env
    page = go(env, "/acls")
    submit(page, "#add-acl", {"resource_type": "TOPIC", "resource_name": TOPIC, "pattern_type": "LITERAL",
                              "principal": "User:alice", "host": "*", "operation": "READ", "permission": "ALLOW"})
    expect(page.locator("#notice")).to_contain_text("Added ALLOW READ for User:alice")
    expect(page.locator("#acls tbody tr")).to_have_count(1)
    submit(page, "#add-acl", {"resource_type": "CLUSTER", "resource_name": "other", "principal": "alice"})
    expect(page.locator("#error")).to_contain_text("ACL not added")
    expect(page.locator("#acls tbody tr")).to_have_count(1)
    browser.shot("acls")
    page.locator("#acls button").first.click()
    page.wait_for_load_state()
    expect(page.locator("#notice")).to_contain_text("Removed 1 ACL")
    page = go(env, "/users")
    submit(page, "#add-user", {"user": "alice", "mechanism": "SCRAM-SHA-512", "iterations": "4096",
                               "password": "s3cret-pass"})
    expect(page.locator("#notice")).to_contain_text("Saved the SCRAM-SHA-512 credential of alice")
    expect(page.locator("#users")).to_contain_text("SCRAM-SHA-512")
    submit(page, "#add-user", {"user": "bob", "iterations": "12", "password": "x"})
    expect(page.locator("#error")).to_contain_text("iterations must be between 4096")
    assert "s3cret-pass" not in page.content()
    browser.shot("users")
    page.locator("#users button").first.click()
    page.wait_for_load_state()
    expect(page.locator("#notice")).to_contain_text("Removed the SCRAM-SHA-512 credential of alice")


def test_metrics_page_charts_each_broker_and_names_the_url_that_fails(env):
    cluster, _console, browser = env
    from confluent_kafka import Producer

    page = go(env, "/broker-metrics")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for i in range(200):
        p.produce(TOPIC, b"m" * 500, key=f"m{i}".encode())
    assert p.flush(30) == 0
    # Each broker's line appears once it has two scrapes; bytes in rises above 0 on some.
    expect(page.locator("#chart-bytes_in polyline")).to_have_count(len(cluster.brokers), timeout=WAIT)
    expect(page.locator("#chart-requests polyline")).to_have_count(len(cluster.brokers))
    wait_for(lambda: float(page.locator("#chart-bytes_in").get_attribute("data-top") or 0) > 0, 30,
             "bytes in above 0 on the chart")
    expect(page.locator("#chart-produce_p99 .last")).to_contain_text("ms now")
    expect(page.locator("#live .error").first).to_contain_text(DEAD_METRICS_URL)
    browser.shot("metrics")


def test_a_broker_going_down_shows_on_the_open_page_which_keeps_working(env):
    cluster, _console, browser = env
    # A topic with one replica per partition, one of them on the broker that goes down.
    create_topic(cluster, "solo", assignment=[[2], [0]])
    produce(cluster, "solo", {0: [b"on-2"], 1: [b"on-0"]})
    page = go(env, "/")
    expect(page.locator("#broker-2 .state")).to_have_text("up")
    cluster.stop_broker(2)
    expect(page.locator("#broker-2 .state")).to_have_text("down", timeout=WAIT)
    expect(page.locator("#broker-2")).to_contain_text("not registered")
    browser.shot("overview-broker-down")
    page = go(env, "/topics")
    expect(page.locator(f"#topic-{TOPIC}")).to_be_visible()
    page = go(env, f"/topics/{TOPIC}/messages?key=needle")
    expect(page.locator("#records tr.record")).to_have_count(1, timeout=WAIT)
    page = go(env, "/")
    expect(page.locator("#offline-count")).to_have_text("1", timeout=WAIT)
    page = go(env, "/topics/solo/messages")
    expect(page.locator("#browse-summary")).to_contain_text("partitions 0 have no leader now: left out")
    expect(page.locator("#records tr.record .value")).to_have_text("on-0")
    browser.shot("messages-partition-offline")
