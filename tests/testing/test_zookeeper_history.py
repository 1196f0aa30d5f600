"""The check of ZooKeeper's own transaction logs after a chaos run: a
session that wrote after a member logged its close is reported with the
close, the write and what followed the close in its epoch; a history where
closed sessions stay closed is reported whole. Dumps as ZooKeeper's
TxnLogToolkit prints them (binary payload bytes included)."""

from __future__ import annotations

from kavka.testing.zookeeper_history import parse, resurrected_sessions

ZK1 = """ZooKeeper Transactional Log File with dbid 0 txnlog format version 2
11/27/26, 12:13:13 PM UTC session 0x200036891760005 cxid 0xba zxid 0x6000003c4 setData /kavka/brokers/topics/queue/partitions/1/state,{"controller_epoch":13,"leader":1,"leader_epoch":17,"isr":[1,3,2]},46
11/27/26, 12:13:26 PM UTC session 0x200036891760005 cxid 0x0 zxid 0x700000005 closeSession v{'/kavka/controller,'/kavka/brokers/ids/1}
11/27/26, 12:13:26 PM UTC session 0x3000369aa990002 cxid 0x2 zxid 0x700000006 multi create: \x00;/kavka/controller\x01\x02 {"version":1,"brokerid":2};setData: ;/kavka/controller_epoch  14
11/27/26, 12:13:43 PM UTC session 0x200036891760005 cxid 0x8 zxid 0x900000014 setData /kavka/brokers/topics/queue/partitions/1/state,{"controller_epoch":13,"leader":1,"leader_epoch":17,"isr":[1,3]},47
EOF Processed 4 txns
"""

ZK2 = """11/27/26, 12:13:52 PM UTC session 0x200036891760005 cxid 0x2d zxid 0xa00000009 multi check: ;/kavka/controller_epoch
11/27/26, 12:14:04 PM UTC session 0x3000369aa990002 cxid 0x0 zxid 0xb0000000c closeSession v{'/kavka/controller,'/kavka/brokers/ids/2}
"""


def test_a_session_writing_after_its_close_is_found_with_the_close_and_what_followed_it():
    txns = parse("zk1", ZK1) + parse("zk2", ZK2)
    assert [t.zxid for t in txns] == [0x6000003C4, 0x700000005, 0x700000006, 0x900000014, 0xA00000009, 0xB0000000C]
    (found,) = resurrected_sessions(txns)
    assert found.session == 0x200036891760005
    assert (found.closed.zxid, found.closed.epoch, found.closed.paths) == (
        0x700000005, 7, ("/kavka/controller", "/kavka/brokers/ids/1"))
    assert (found.wrote.zxid, found.wrote.epoch, found.wrote.op) == (0x900000014, 9, "setData")
    assert found.wrote.paths == ("/kavka/brokers/topics/queue/partitions/1/state",)
    assert found.members_with_close == ("zk1",)
    assert [t.zxid for t in found.followed_by] == [0x700000006]
    assert "/kavka/controller" in found.followed_by[0].paths
    text = found.describe()
    assert "0x200036891760005" in text and "zxid 0x700000005 (epoch 0x7)" in text and "epoch 0x9" in text


def test_closed_sessions_that_stay_closed_are_no_finding():
    whole = ZK1.replace("zxid 0x900000014", "zxid 0x6000003c5")  # the write before the close
    closed_later = ZK2.splitlines()[1]  # session 0x3000369aa990002 closed, and silent after
    assert resurrected_sessions(parse("zk1", whole) + parse("zk2", closed_later)) == []


def test_the_same_close_logged_by_several_members_names_them_all():
    txns = parse("zk1", ZK1) + parse("zk3", ZK1)
    (found,) = resurrected_sessions(txns)
    assert found.members_with_close == ("zk1", "zk3")
    assert len(found.followed_by) == 1  # one transaction, whichever logs hold it


def test_lines_that_are_not_transactions_are_skipped():
    assert parse("zk1", "ZooKeeper Transactional Log File\n\x00\x01garbage\nEOF Processed 0 txns\n") == []


def test_requests_refused_after_the_close_are_no_write():
    """ZooKeeper logs the requests of a closing session it refused as error
    transactions (-112: SESSIONEXPIRED) right after the close."""
    dump = ZK1.splitlines()[2] + "\n" + ZK1.splitlines()[3] + "\n" + (
        "11/27/26, 12:13:26 PM UTC session 0x200036891760005 cxid 0x3e zxid 0x700000007 error -112\n")
    txns = parse("zk1", dump)
    assert [t.op for t in txns] == ["closeSession", "multi", "error"]
    assert resurrected_sessions(txns) == []
