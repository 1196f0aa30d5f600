"""Reading a broker's Prometheus endpoint in tests: every sample by name
and labels, parsed by prometheus-client's own text parser."""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    """One scrape: ``families`` names every family exported (with or
    without samples), ``samples`` maps (sample name, sorted labels) to
    its value."""

    text: str
    families: frozenset[str]
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]

    def value(self, name: str, **labels: str) -> float:
        """The sample with exactly these labels; KeyError naming what there is."""
        key = (name, tuple(sorted(labels.items())))
        if key not in self.samples:
            have = [k for k in self.samples if k[0] == name]
            raise KeyError(f"no sample {name}{labels}; the scrape has {have[:20]}")
        return self.samples[key]

    def total(self, name: str, **labels: str) -> float:
        """The sum of the samples of ``name`` whose labels include ``labels``."""
        return sum(v for (n, ls), v in self.samples.items()
                   if n == name and all((k, want) in ls for k, want in labels.items()))

    def series(self, name: str) -> list[dict[str, str]]:
        return [dict(ls) for (n, ls) in self.samples if n == name]

    @property
    def sample_names(self) -> set[str]:
        return {n for n, _ in self.samples}


def parse(text: str) -> Scrape:
    families = set()
    samples = {}
    for family in text_string_to_metric_families(text):
        families.add(family.name)
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    # a counter family is named without _total by the parser; the text's own names count too
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            families.add(line.split()[2])
    return Scrape(text, frozenset(families), samples)


def scrape(url: str, timeout: float = 15.0) -> Scrape:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a loopback test URL
        return parse(response.read().decode())
