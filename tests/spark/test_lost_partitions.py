"""The data-loss decision of the stream reader (``kavka.spark.lost_partitions``):
which partitions are gone or rewound, and the offsets a batch may end at.
Pure: property tests plus the cases that matter for a broker failover."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.topic_partition import TopicPartition
from kavka.spark.lost_partitions import OffsetCheck, PartitionListing, check_offsets

TOPICS = ("a", "b", "c")
tps = st.builds(TopicPartition, st.sampled_from(TOPICS), st.integers(0, 3))
offset_maps = st.dictionaries(tps, st.integers(0, 50), max_size=8)
listings = st.builds(PartitionListing, st.frozensets(tps, max_size=8), st.frozensets(st.sampled_from(TOPICS)),
                     st.booleans())


@settings(max_examples=200)
@given(offset_maps, offset_maps, listings)
def test_check_offsets_properties(position, latest, listing):
    check = check_offsets(position, latest, listing)
    gone = {tp for tp in position if listing.complete and tp.topic not in listing.unsure_topics
            and tp not in listing.partitions}
    rewound = {tp for tp in position if tp in latest and latest[tp] < position[tp] and tp not in gone}
    assert set(check.gone) == gone and list(check.gone) == sorted(gone)
    assert {r.topic_partition for r in check.rewound} == rewound
    assert [r.topic_partition for r in check.rewound] == sorted(rewound)
    assert all((r.position, r.latest) == (position[r.topic_partition], latest[r.topic_partition])
               for r in check.rewound)
    kept = (set(position) | {tp for tp in latest if not listing.lacks(tp)}) - gone - rewound
    assert set(check.offsets) == kept
    for tp in kept:
        assert check.offsets[tp] == latest.get(tp, position.get(tp))
        assert check.offsets[tp] >= position.get(tp, 0)  # never behind where the query is
    assert check.lost == bool(gone or rewound)
    if check.lost:
        text = check.message()
        assert "'failOnDataLoss' to 'false'" in text
        assert all(str(tp) in text for tp in gone | rewound)


@settings(max_examples=100)
@given(offset_maps, offset_maps, st.frozensets(tps, max_size=8))
def test_an_incomplete_answer_never_shows_a_partition_gone(position, latest, listed):
    check = check_offsets(position, latest, PartitionListing(listed, complete=False))
    assert check.gone == ()
    assert set(position) <= set(check.offsets) | {r.topic_partition for r in check.rewound}


def test_leaderless_partition_during_failover_keeps_its_place():
    # Kavka lists a partition whose leader died (LEADER_NOT_AVAILABLE, leader
    # -1); its latest offset may not be known yet.
    tp = TopicPartition("a", 0)
    check = check_offsets({tp: 7}, {}, PartitionListing(frozenset({tp})))
    assert check == OffsetCheck({tp: 7}, (), ())


def test_topic_with_an_uncertain_error_keeps_its_place():
    tp = TopicPartition("a", 1)
    check = check_offsets({tp: 3}, {}, PartitionListing(frozenset(), frozenset({"a"})))
    assert check == OffsetCheck({tp: 3}, (), ())


def test_deleted_topic_is_gone_and_new_partition_starts():
    old, other, new = TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("b", 1)
    check = check_offsets({old: 5, other: 2}, {other: 4, new: 1}, PartitionListing(frozenset({other, new})))
    assert check.gone == (old,) and check.rewound == ()
    assert check.offsets == {other: 4, new: 1}
    assert "a-0 are gone" in check.message()


def test_recreated_partition_is_rewound():
    tp = TopicPartition("a", 0)
    check = check_offsets({tp: 30}, {tp: 5}, PartitionListing(frozenset({tp})))
    assert check.gone == () and [str(r) for r in check.rewound] == ["a-0 (offset went back from 30 to 5)"]
    assert check.offsets == {}
