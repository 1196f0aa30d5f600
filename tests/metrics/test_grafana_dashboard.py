"""The Grafana dashboard (docs/grafana/kavka.json) names only metrics a
real broker exports: every PromQL expression of every panel and template
variable is taken apart, and each metric name in it must be in the scrape
of a broker that has served a producer and a consumer group."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from tests.metrics.scrape import scrape
from tests.metrics.test_broker_endpoint import _bootstrap, _create_produce_consume, _scrape_until, _url
from tests.server.broker_harness import InProcessBroker

pytestmark = [pytest.mark.async_timeout(180.0)]

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "kavka.json"

# PromQL's functions, aggregations and keywords (what is not a metric name)
PROMQL_WORDS = frozenset({
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group",
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
    "rate", "irate", "increase", "delta", "idelta", "deriv", "predict_linear", "histogram_quantile", "abs",
    "clamp_min", "clamp_max", "label_values", "label_replace", "vector", "scalar", "time", "changes", "resets",
    "avg_over_time", "max_over_time", "min_over_time", "sum_over_time", "absent", "sort", "sort_desc", "inf", "nan",
})
IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def expressions(node) -> list[str]:
    """Every PromQL expression in the dashboard: targets' ``expr`` and the
    template variables' queries, at any depth."""
    out: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "expr" and isinstance(value, str):
                out.append(value)
            elif key == "query" and isinstance(value, dict) and isinstance(value.get("query"), str):
                out.append(value["query"])
            else:
                out.extend(expressions(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(expressions(item))
    return out


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (its strings, label matchers,
    grouping labels, ranges and numbers taken out first)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    # label_values(metric, label): the label is not a metric
    text = re.sub(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_]+\s*\)", r"\1", text)
    names = set()
    for match in IDENTIFIER.finditer(text):
        word = match.group(0)
        if word.lower() not in PROMQL_WORDS and not re.fullmatch(r"\d+(e\d+)?", word):
            names.add(word)
    return names


def test_metric_names_are_taken_out_of_promql() -> None:
    assert metric_names('histogram_quantile(0.99, sum by (le, instance) (rate(kavka_event_loop_lag_seconds_bucket'
                        '{instance=~"$instance"}[1m])))') == {"kavka_event_loop_lag_seconds_bucket"}
    assert metric_names("label_values(kafka_consumergroup_lag, consumergroup)") == {"kafka_consumergroup_lag"}
    assert metric_names('sum by (topic) (max by (topic, partition) (a_end{x="y"}) - max by (topic) (b_start))') \
        == {"a_end", "b_start"}


def test_the_dashboard_has_its_sections_and_an_expression_in_each_panel() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
    assert rows == ["Overview", "Topics", "Replication", "Requests", "Groups", "ZooKeeper and process"]
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel["title"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


async def test_every_metric_the_dashboard_names_is_exported_by_a_real_broker(zk_chroot, tmp_path) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    wanted: dict[str, list[str]] = {}
    for expr in expressions(dashboard):
        for name in metric_names(expr):
            wanted.setdefault(name, []).append(expr)
    assert len(wanted) >= 30, sorted(wanted)
    async with InProcessBroker(zk_chroot, tmp_path, **{"metrics.port": "0", "metrics.host": "127.0.0.1",
                                                        "authorizer.class.name": ""}) as broker:
        await asyncio.to_thread(_create_produce_consume, _bootstrap(broker), "dashboarded", "watchers")
        s = await _scrape_until(_url(broker), lambda s: "kafka_consumergroup_lag" in s.sample_names)
        s = await asyncio.to_thread(scrape, _url(broker))
    # a name is exported when the scrape has samples of it, or its family
    # (a per-client family with no client throttled has none yet)
    exported = s.sample_names | s.families
    missing = {name: exprs[0] for name, exprs in wanted.items() if name not in exported}
    assert not missing, f"the dashboard names metrics no broker exports: {missing}"
