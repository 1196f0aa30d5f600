"""ZooKeeper multiRead (opcode 22): the request's wire form, the response
decoder (property test against an independent encoder of ZooKeeper's
MultiResponse), and ``get_many`` / ``get_partition_states`` on a real
ZooKeeper, with and without multiRead."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.exceptions import NoNodeError as KazooNoNode
from kazoo.protocol.states import ZnodeStat

from kavka.zk.brokers import PartitionStateZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.multi_read import MultiRead
from kavka.zk.store import KazooZkStore


def _encode_response(parts: list) -> bytes:
    """ZooKeeper's MultiResponse for getData parts: (data, stat tuple) or an error code."""
    out = b""
    for part in parts:
        if isinstance(part, int):
            out += struct.pack("!i?i", -1, False, part) + struct.pack("!i", part)
        else:
            data, stat = part
            out += struct.pack("!i?i", 4, False, 0)
            out += struct.pack("!i", -1) if data is None else struct.pack("!i", len(data)) + data
            out += struct.pack("!qqqqiiiqiiq", *stat)
    return out + struct.pack("!i?i", -1, True, -1)


def test_request_wire_form() -> None:
    body = bytes(MultiRead(["/a", "/bc"]).serialize())
    assert MultiRead.type == 22
    assert body == (
        struct.pack("!i?i", 4, False, -1) + struct.pack("!i", 2) + b"/a" + b"\x00"
        + struct.pack("!i?i", 4, False, -1) + struct.pack("!i", 3) + b"/bc" + b"\x00"
        + struct.pack("!i?i", -1, True, -1)
    )


_stats = st.tuples(*([st.integers(0, 2**40)] * 4 + [st.integers(0, 2**20)] * 3 + [st.integers(0, 2**40)] + [st.integers(0, 2**20)] * 2 + [st.integers(0, 2**40)]))
_parts = st.lists(st.one_of(st.tuples(st.one_of(st.none(), st.binary(max_size=64)), _stats), st.just(-101)), max_size=20)


@settings(max_examples=60)
@given(_parts, st.binary(max_size=8))
def test_response_decoding_matches_zookeepers_encoding(parts: list, prefix: bytes) -> None:
    buf = prefix + _encode_response(parts)
    got = MultiRead([f"/p{i}" for i in range(len(parts))]).deserialize(buf, len(prefix))
    assert len(got) == len(parts)
    for want, have in zip(parts, got, strict=True):
        if isinstance(want, int):
            assert isinstance(have, KazooNoNode)
        else:
            assert have == (want[0] or b"", ZnodeStat._make(want[1]))


async def test_get_many_and_partition_states_on_a_real_zookeeper(zk_chroot: str) -> None:
    store = KazooZkStore(zk_chroot, session_timeout_ms=6000)
    await store.start()
    try:
        zk = KavkaZkClient(store, read_batch_size=7)
        states = [PartitionStateZNode("t", p, p % 3, p, (p % 3, 5), 2) for p in range(0, 40, 2)]
        for s in states:
            await store.create(s.znode_path, s.encode(), make_parents=True)
        paths = [PartitionStateZNode.path("t", p) for p in range(40)]
        many = await store.get_many(paths)
        assert [m is not None for m in many] == [p % 2 == 0 for p in range(40)]
        for path, m in zip(paths, many, strict=True):
            if m is not None:
                assert m == await store.get(path)
        keys = [("t", p) for p in range(40)] + [("nope", 0)]
        fast = await zk.get_partition_states(keys)
        assert fast == await zk.get_partition_states_one_by_one(keys)
        assert {k: v[0] for k, v in fast.items()} == {(s.topic, s.partition): s for s in states}
        store._multi_read = False  # a server without multiRead: one get each, same answer
        assert await store.get_many(paths) == many
        assert await store.get_many([]) == []
    finally:
        await store.close()
