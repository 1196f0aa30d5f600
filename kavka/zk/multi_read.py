"""ZooKeeper's ``multiRead`` (opcode 22, ZooKeeper 3.6+, ZOOKEEPER-3402):
many reads in one request and one response, as kazoo's request protocol
needs them (``type``, ``serialize()``, ``deserialize(buffer, offset)``);
kazoo 2.x has no such request of its own.

Why: a controller failover reads the state of every partition (seed 000
§Controller Failover step 7). One ``get`` per partition costs a request, a
response, a kazoo callback and a loop hand-off each — 10,000 of them took
seconds; a multiRead of a few hundred paths costs one of each. Unlike a
``multi`` of writes it is not a transaction: each read succeeds or fails on
its own, and none sets a watch.

Wire format (jute, as ZooKeeper's MultiOperationRecord / MultiResponse):

- request: per read a MultiHeader (int type=4 getData, bool done=false,
  int err=-1) then the GetDataRequest (string path, bool watch=false);
  ends with MultiHeader(-1, true, -1);
- response: per read a MultiHeader, then for type 4 a GetDataResponse
  (buffer data, Stat), for type -1 an ErrorResponse (int err); ends with a
  MultiHeader whose done is true.

Pure data; kazoo's connection thread serializes and deserializes it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.states import ZnodeStat

MULTI_READ_OPCODE = 22
GET_DATA_OPCODE = 4
ERROR_TYPE = -1

_header = struct.Struct("!i?i")
_int = struct.Struct("!i")
_stat = struct.Struct("!qqqqiiiqiiq")
_END = _header.pack(-1, True, -1)


class MultiReadProtocolError(Exception):
    """The server's multiRead response had a part this client does not read."""


class MultiRead:
    """One multiRead of ``paths`` (already chroot-prefixed). The result is
    a list, in path order, of ``(data, ZnodeStat)`` or a kazoo exception
    instance (e.g. ``NoNodeError``) for a read that failed."""

    type = MULTI_READ_OPCODE

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)

    def serialize(self) -> bytearray:
        b = bytearray()
        opening = _header.pack(GET_DATA_OPCODE, False, -1)
        for path in self.paths:
            encoded = path.encode("utf-8")
            b += opening
            b += _int.pack(len(encoded))
            b += encoded
            b += b"\x00"  # no watch
        b += _END
        return b

    def deserialize(self, buf: bytes, offset: int) -> list:
        results: list = []
        while True:
            kind, done, _ = _header.unpack_from(buf, offset)
            offset += _header.size
            if done:
                break
            if kind == GET_DATA_OPCODE:
                (length,) = _int.unpack_from(buf, offset)
                offset += _int.size
                data = b"" if length < 0 else bytes(buf[offset : offset + length])
                offset += max(length, 0)
                results.append((data, ZnodeStat._make(_stat.unpack_from(buf, offset))))
                offset += _stat.size
            elif kind == ERROR_TYPE:
                (err,) = _int.unpack_from(buf, offset)
                offset += _int.size
                results.append(EXCEPTIONS[err]())
            else:
                raise MultiReadProtocolError(f"unexpected part of type {kind} in a multiRead response")
        if len(results) != len(self.paths):
            raise MultiReadProtocolError(f"multiRead of {len(self.paths)} paths answered {len(results)} results")
        return results
