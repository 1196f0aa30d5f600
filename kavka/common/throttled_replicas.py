"""The ``leader.replication.throttled.replicas`` and
``follower.replication.throttled.replicas`` topic settings (seed 002 §8, KIP-73).

A value is ``*`` (every replica of the topic) or a comma-separated list of
``partition:broker`` pairs, as Kafka's reassignment tool writes it
(``0:1,1:2``); empty means none. The broker in a pair is the broker that
applies the throttle: in the leader list, a broker that serves partition
``p`` as its leader throttles the out-of-sync followers of ``p`` when
``(p, itself)`` is listed; in the follower list, a broker following ``p``
throttles its own fetching of ``p`` when ``(p, itself)`` is listed.

``ThrottledReplicas`` is the parsed value (frozen); ``validate_throttled_replicas``
is the ``ConfigDef`` validator of the two topic keys (typed LIST values) and
names the bad entry; ``ThrottledReplicas.of`` parses a list of entries and
caches the result, because the leader asks once per partition per follower
fetch while a throttle rate is set.

Pure values and functions; any thread.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kavka.common.config import ConfigError

LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
WILDCARD = "*"


def _bad(entry: str) -> ValueError:
    return ValueError(
        f"throttled replica entry {entry!r} is not 'partition:broker' (e.g. '0:1'); use '*' alone for every replica"
    )


def _pair(entry: str) -> tuple[int, int]:
    partition, sep, broker = entry.partition(":")
    partition, broker = partition.strip(), broker.strip()
    # isdigit() also accepts other scripts' digits and superscripts: ASCII only.
    if not sep or not (partition.isascii() and partition.isdigit() and broker.isascii() and broker.isdigit()):
        raise _bad(entry)
    return int(partition), int(broker)


@dataclass(frozen=True, slots=True)
class ThrottledReplicas:
    """A parsed ``*.replication.throttled.replicas`` value: every replica
    (``all_replicas``) or the listed ``(partition, broker)`` pairs."""

    all_replicas: bool = False
    pairs: frozenset[tuple[int, int]] = frozenset()

    @classmethod
    def parse(cls, value: str | None) -> ThrottledReplicas:
        """``"*"``, ``"0:1,1:2"`` or empty/None. Raises ``ValueError`` naming
        the bad entry."""
        return cls.of(tuple(e.strip() for e in (value or "").split(",")))

    @classmethod
    def of(cls, entries: Iterable[str]) -> ThrottledReplicas:
        """From the entries of a LIST-typed config value (blank entries are
        ignored); ``*`` must stand alone. Raises ``ValueError``."""
        return _parse_entries(tuple(entries))

    def throttles(self, partition: int, broker_id: int) -> bool:
        return self.all_replicas or (partition, broker_id) in self.pairs

    @property
    def empty(self) -> bool:
        return not self.all_replicas and not self.pairs


NONE = ThrottledReplicas()


@functools.lru_cache(maxsize=1024)
def _parse_entries(entries: tuple[str, ...]) -> ThrottledReplicas:
    items = [e.strip() for e in entries if e.strip()]
    if WILDCARD in items:
        if len(items) != 1:
            raise ValueError(f"'*' throttles every replica and must stand alone, got {','.join(items)!r}")
        return ThrottledReplicas(all_replicas=True)
    if not items:
        return NONE
    return ThrottledReplicas(pairs=frozenset(_pair(e) for e in items))


def validate_throttled_replicas(key: str, value: Any) -> None:
    """``ConfigDef`` validator: ``value`` is the typed LIST (a list of str)."""
    if value is None:
        return
    entries: Sequence[str] = value if isinstance(value, (list, tuple)) else [str(value)]
    try:
        ThrottledReplicas.of(entries)
    except ValueError as e:
        raise ConfigError(key, str(e)) from None
