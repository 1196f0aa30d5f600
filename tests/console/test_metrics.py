"""Prometheus text parsing and the Metrics page's series."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.console import metrics

TEXT = """# HELP kafka_server_brokertopicmetrics_bytesin_total Bytes in
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total{topic="a"} 100.0
kafka_server_brokertopicmetrics_bytesin_total{topic="b"} 50
kafka_server_brokertopicmetrics_bytesout_total 7
kafka_network_requestmetrics_requests_total{request="Produce",version="9"} 10
kafka_network_requestmetrics_requests_total{request="Fetch",version="12"} 5
kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"} 12.5
kafka_network_requestmetrics_totaltimems{request="Fetch",quantile="0.99"} 3
kafka_network_requestmetrics_totaltimems{request="FetchConsumer",quantile="0.99"} NaN
odd_label{a="x\\"y\\\\z"} 1 1700000000000
"""


def test_parse_labels_values_and_escapes():
    samples = metrics.parse(TEXT)
    assert samples[metrics.BYTES_IN][(("topic", "a"),)] == 100.0
    assert samples["odd_label"][(("a", 'x"y\\z'),)] == 1
    with pytest.raises(metrics.ExpositionError, match="line 1"):
        metrics.parse("not a sample line at all {")
    with pytest.raises(metrics.ExpositionError, match="is not a number"):
        metrics.parse("x 1.2.3")


def test_summary_totals_and_quantiles():
    s = metrics.summarize(0.0, metrics.parse(TEXT))
    assert s.counters == {"bytes_in": 150.0, "bytes_out": 7.0, "requests": 15.0}
    assert s.gauges == {"produce_p99": 12.5, "fetch_p99": 3.0}  # FetchConsumer has none yet: plain Fetch
    # A broker-wide series (no topic label) wins over the per-topic ones.
    both = metrics.parse(TEXT + "kafka_server_brokertopicmetrics_bytesin_total 1000\n")
    assert metrics.summarize(0.0, both).counters["bytes_in"] == 1000.0


def test_rates_skip_counter_resets():
    h = metrics.MetricsHistory(("u",))
    for at, n in [(0.0, 0), (10.0, 100), (20.0, 50), (30.0, 150)]:
        h.record("u", at, f"kafka_server_brokertopicmetrics_bytesin_total {n}\n")
    assert h.chart("bytes_in") == {"u": [(10.0, 10.0), (30.0, 10.0)]}
    h.record("u", 40.0, "garbage {")
    assert "did not answer Prometheus text" in h.errors["u"]
    h.failed("u", "connection refused")
    assert h.errors["u"] == "u: connection refused"


def test_svg_paths_scale_into_the_box():
    paths, top = metrics.svg_paths({"a": [(0.0, 0.0), (10.0, 5.0)], "b": []}, width=100, height=50)
    assert top == 5.0
    assert paths == {"a": "0.0,50.0 100.0,0.0", "b": ""}
    assert metrics.svg_paths({"a": []}) == ({"a": ""}, 0.0)


@given(st.text(max_size=400))
def test_parse_either_reads_or_says_which_line(text):
    try:
        metrics.parse(text)
    except metrics.ExpositionError as e:
        assert str(e).startswith("line ")
