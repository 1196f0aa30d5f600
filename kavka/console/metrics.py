"""The console's Metrics page: read each broker's Prometheus text
exposition (format 0.0.4), keep a short history of scrapes, and turn it
into per-broker series: bytes in and out per second, requests per second,
and the 99th percentile of the total time of Produce and of consumers'
Fetch (FetchConsumer, as Kafka names it; plain Fetch where a broker does
not split it).

The names are those the Prometheus JMX exporter's common Kafka rules give
Kafka's JMX metrics (``kafka_server_brokertopicmetrics_bytesin_total``,
``kafka_network_requestmetrics_requests_total{request,version}``,
``kafka_network_requestmetrics_totaltimems{request,quantile}``), so the
page reads a Kafka broker behind the exporter as well as a Kavka broker.
A counter without a ``topic`` label is the broker's total; when only
per-topic series exist their sum is used. Rates come from consecutive
scrapes; a counter that went down (a restarted broker) gives no rate for
that interval.

``parse`` is pure and bounded (the scraper caps what it reads);
``MetricsHistory`` belongs to the console's event loop.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
REQUESTS = "kafka_network_requestmetrics_requests_total"
TOTAL_TIME = "kafka_network_requestmetrics_totaltimems"
MAX_SCRAPE_BYTES = 16 << 20
_LINE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?[0-9]+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

Labels = tuple[tuple[str, str], ...]


class ExpositionError(ValueError):
    """A line of the scraped text is not Prometheus text format."""


def _labels(text: str, line_no: int) -> Labels:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip():
                raise ExpositionError(f"line {line_no}: bad labels {text[:80]!r}")
            break
        value = re.sub(r'\\[\\"n]', lambda e: _UNESCAPE[e.group(0)], m.group(2))
        out.append((m.group(1), value))
        pos = m.end()
    return tuple(sorted(out))


def parse(text: str) -> dict[str, dict[Labels, float]]:
    """Samples by metric name, then by sorted label pairs. Comments and
    blank lines are skipped; a malformed sample line raises
    ExpositionError naming its line."""
    out: dict[str, dict[Labels, float]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise ExpositionError(f"line {n}: not a sample: {line[:80]!r}")
        try:
            value = float(m.group(4))
        except ValueError:
            raise ExpositionError(f"line {n}: value {m.group(4)[:30]!r} is not a number") from None
        out.setdefault(m.group(1), {})[_labels(m.group(3) or "", n)] = value
    return out


def _total(samples: Mapping[str, Mapping[Labels, float]], name: str) -> float | None:
    series = samples.get(name)
    if not series:
        return None
    untopiced = [v for labels, v in series.items() if "topic" not in dict(labels)]
    return sum(untopiced) if untopiced else sum(series.values())


def _quantile(samples: Mapping[str, Mapping[Labels, float]], name: str, requests: tuple[str, ...],
              q: str) -> float | None:
    """The first of ``requests`` (Kafka splits Fetch into FetchConsumer
    and FetchFollower) that has the quantile."""
    for request in requests:
        for labels, v in samples.get(name, {}).items():
            d = dict(labels)
            if d.get("request") == request and d.get("quantile") == q and not math.isnan(v):
                return v
    return None


@dataclass(frozen=True, slots=True)
class Scrape:
    at: float  # seconds (the console's clock)
    counters: Mapping[str, float | None]
    gauges: Mapping[str, float | None]


def summarize(at: float, samples: Mapping[str, Mapping[Labels, float]]) -> Scrape:
    """What the charts need from one scrape."""
    return Scrape(at, {"bytes_in": _total(samples, BYTES_IN), "bytes_out": _total(samples, BYTES_OUT),
                       "requests": _total(samples, REQUESTS)},
                  {"produce_p99": _quantile(samples, TOTAL_TIME, ("Produce",), "0.99"),
                   "fetch_p99": _quantile(samples, TOTAL_TIME, ("FetchConsumer", "Fetch"), "0.99")})


CHARTS = (("bytes_in", "Bytes in / s", "B/s"), ("bytes_out", "Bytes out / s", "B/s"),
          ("requests", "Requests / s", "req/s"), ("produce_p99", "Produce total time p99", "ms"),
          ("fetch_p99", "Consumer fetch total time p99", "ms"))


def series(scrapes: Iterable[Scrape], key: str) -> list[tuple[float, float]]:
    """(time, value) points: a rate between consecutive scrapes for a
    counter, the value itself for a gauge."""
    points: list[tuple[float, float]] = []
    prev: Scrape | None = None
    for s in scrapes:
        if key in s.gauges:
            v = s.gauges[key]
            if v is not None:
                points.append((s.at, v))
        elif prev is not None:
            a, b = prev.counters.get(key), s.counters.get(key)
            if a is not None and b is not None and b >= a and s.at > prev.at:
                points.append((s.at, (b - a) / (s.at - prev.at)))
        prev = s
    return points


@dataclass
class MetricsHistory:
    """The last ``keep`` scrapes of each metrics URL, and the last error."""

    urls: tuple[str, ...]
    keep: int = 120
    scrapes: dict[str, deque[Scrape]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def record(self, url: str, at: float, text: str) -> None:
        try:
            summary = summarize(at, parse(text))
        except ExpositionError as e:
            self.errors[url] = f"{url} did not answer Prometheus text: {e}"
            return
        self.errors.pop(url, None)
        self.scrapes.setdefault(url, deque(maxlen=self.keep)).append(summary)

    def failed(self, url: str, reason: str) -> None:
        self.errors[url] = f"{url}: {reason}"

    def chart(self, key: str) -> dict[str, list[tuple[float, float]]]:
        return {url: series(self.scrapes.get(url, ()), key) for url in self.urls}


def svg_paths(lines: Mapping[str, list[tuple[float, float]]], width: int = 560,
              height: int = 160) -> tuple[dict[str, str], float]:
    """SVG polyline points per line, scaled into width x height (y grows
    downwards), and the largest value (the chart's top)."""
    pts = [p for line in lines.values() for p in line]
    if not pts:
        return {k: "" for k in lines}, 0.0
    t0 = min(t for t, _ in pts)
    t1 = max(t for t, _ in pts)
    top = max(v for _, v in pts) or 1.0
    span = (t1 - t0) or 1.0
    out = {}
    for k, line in lines.items():
        out[k] = " ".join(f"{(t - t0) / span * width:.1f},{height - v / top * height:.1f}" for t, v in line)
    return out, top
