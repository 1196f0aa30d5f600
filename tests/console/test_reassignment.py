"""The console's reassignment plans and KIP-73 throttle settings."""

from __future__ import annotations

import random

import pytest

from kavka.console import reassignment
from kavka.tools.reassign_plan import PartitionMove, PlanError

ASSIGNMENT = {("t", 0): (0, 1), ("t", 1): (1, 2), ("t", 2): (2, 0), ("u", 0): (0,)}


def test_propose_keeps_the_replication_factor_and_the_chosen_partitions():
    moves = reassignment.propose(ASSIGNMENT, {0, 1, 2, 3}, "t", [0, 2], [2, 3], random.Random(1))
    assert [m.partition for m in moves] == [0, 2]
    assert all(len(m.replicas) == 2 and set(m.replicas) <= {2, 3} for m in moves)
    spread = reassignment.propose(ASSIGNMENT, {0, 1, 2, 3}, "t", [0, 1, 2], None, random.Random(1))
    assert {b for m in spread for b in m.replicas} <= {0, 1, 2, 3} and len(spread) == 3


def test_propose_refuses_unknown_brokers_partitions_and_too_few_brokers():
    with pytest.raises(PlanError, match=r"brokers \[7\] are not in the cluster"):
        reassignment.propose(ASSIGNMENT, {0, 1, 2}, "t", [0], [0, 7])
    with pytest.raises(PlanError, match=r"no partitions \[5\]"):
        reassignment.propose(ASSIGNMENT, {0, 1, 2}, "t", [5], [0, 1])
    with pytest.raises(PlanError, match="topic t"):
        reassignment.propose(ASSIGNMENT, {0, 1, 2}, "t", [0], [0])


def test_check_refuses_dead_brokers_and_missing_partitions():
    ok = (PartitionMove("t", 0, (1, 0)),)
    assert reassignment.check(ok, ASSIGNMENT, {0, 1}) == ok
    with pytest.raises(PlanError, match=r"names brokers \[5\]"):
        reassignment.check((PartitionMove("t", 0, (5, 0)),), ASSIGNMENT, {0, 1})
    with pytest.raises(PlanError, match="t-9 do not exist"):
        reassignment.check((PartitionMove("t", 9, (0,)),), ASSIGNMENT, {0, 1})


def test_throttle_lists_current_replicas_for_leaders_and_new_ones_for_followers():
    t = reassignment.throttle((PartitionMove("t", 0, (1, 3)), PartitionMove("t", 1, (1, 2))), ASSIGNMENT, 1000)
    assert t.topics == {"t": ("0:0,0:1,1:1,1:2", "0:3")}
    assert t.brokers == (0, 1, 2, 3) and t.rate == 1000
    with pytest.raises(PlanError, match="positive"):
        reassignment.throttle((), ASSIGNMENT, 0)
