"""Every metric family a broker exports under Kafka's or Kavka's names is
in the README's metrics table (written as itself, or as ``..._<rest>``
beside a sibling on the same row), and the table names nothing else."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.metrics.scrape import scrape
from tests.metrics.test_broker_endpoint import _bootstrap, _create_produce_consume, _url
from tests.server.broker_harness import InProcessBroker

pytestmark = [pytest.mark.async_timeout(180.0)]

README = Path(__file__).resolve().parents[2] / "README.md"


def table_names() -> set[str]:
    """The metric names of the README's metrics table, ``..._x`` expanded
    from the full name before it on the same row."""
    text = README.read_text()
    section = text[text.index("## Metrics"):]
    section = section[:section.index("\n## ", 3)]
    names: set[str] = set()
    for row in section.splitlines():
        if not row.startswith("| `"):
            continue
        first_cell = row.split(" | ")[0]
        previous = None
        for name in re.findall(r"`([a-z_.]+)`", first_cell):
            if name.startswith("..._") and previous is not None:
                # a sibling: the full name before it with as many trailing parts replaced
                tail = name[4:].split("_")
                names.add("_".join(previous.split("_")[:-len(tail)] + tail))
            elif name.startswith(("kafka_", "kavka_")):
                names.add(name)
                previous = name
    return names


async def test_every_exported_family_is_in_the_readme_table(zk_chroot, tmp_path) -> None:
    async with InProcessBroker(zk_chroot, tmp_path, **{"metrics.port": "0", "metrics.host": "127.0.0.1",
                                                        "authorizer.class.name": ""}) as broker:
        await asyncio.to_thread(_create_produce_consume, _bootstrap(broker), "documented", "readers")
        s = await asyncio.to_thread(scrape, _url(broker))
    exported = {f for f in s.families if f.startswith(("kafka_", "kavka_"))}
    documented = table_names()

    def in_table(family: str) -> bool:
        return family in documented or re.sub(r"_total$", "", family) in {re.sub(r"_total$", "", d)
                                                                         for d in documented}

    assert not [f for f in sorted(exported) if not in_table(f)], "exported but not in the README's table"
    stripped = {re.sub(r"_total$", "", f) for f in exported}
    assert not [d for d in sorted(documented) if re.sub(r"_total$", "", d) not in stripped], \
        "in the README's table but not exported"
