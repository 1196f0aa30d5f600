"""The decode budget: how much memory the objects decoded from one request
may take, charged before they are built.

Checking every declared length against the bytes that remain (the
decoders do, CVE-2022-34917) bounds the *number* of elements by the frame
size, not the memory: a 2 MB Metadata v1 request of one million empty
topic names passes that check (two bytes each) yet decodes to a million
64-byte structs, 36 times the frame. So each decode carries a
``DecodeBudget`` in bytes of Python objects, and the generated decoders
charge it from a cost model before allocating:

* an array of n structs: n times the element's fixed cost (the instance,
  its list slot, an int object per integer field, the base of each string,
  bytes, uuid and records field, its single nested structs), at the length
  read, before the loop;
* an array of n primitives: n times the slot and the element's object;
* a string or bytes value: its length (four times that when the UTF-8
  decodes to non-ASCII, the widest str kind), as it is read;
* tagged fields: the dict or set entry, the key and the value, per field.

The costs are CPython's object sizes as ``sys.getsizeof`` reports them
(what ``tracemalloc`` counts), taken at import, so the model overestimates
(a small int, an empty string or null costs nothing real) and never
underestimates what stays built. A request's budget is ``AMPLIFICATION``
bytes per frame byte plus ``ALLOWANCE``. The factor is set by what real
clients send: small elements cost Python far more than their wire bytes
(a Metadata v1 request naming topics of seven characters holds 14 bytes
of objects per frame byte, a Fetch v4 request 10.5: 64-104-byte structs
for 9-24 wire bytes; the controller's LeaderAndIsr v5 and UpdateMetadata
v7 are charged 22 and 20 per frame byte, a partition state's ints and
replica lists for about 46 wire bytes, and carry every partition of the
cluster after a broker failure), and every such request must decode
whatever its size; hostile frames of minimal elements (the 36x above) are
refused.
The allowance lets small requests with tiny elements through (a
Metadata request for a thousand two-letter topics). The ratios are
measured in ``tests/protocol/test_decode_budget.py``. A frame over budget
raises ``DecodeBudgetError``, a ``DecodeError``: the broker closes the
connection as for any malformed request and logs the peer. Responses
(decoded by Kavka's own client from brokers it chose) are decoded without
a budget.

Pure values; one budget per decode, used by one thread.
"""

from __future__ import annotations

import sys
import uuid

from kavka.protocol.errors import DecodeError

AMPLIFICATION = 24  # bytes of decoded objects allowed per byte of frame
ALLOWANCE = 1 << 20  # plus this much for any request

# Object sizes (CPython, 64-bit), charged per value decoded.
POINTER = 8
LIST_BASE = sys.getsizeof([])
# A list built by append holds up to n + n/8 + 6 slots (CPython's growth).
LIST_SLOT = POINTER + POINTER // 8 + 1
STR_BASE = sys.getsizeof("")
# A non-ASCII string's header is larger and each character may take four
# bytes (UCS-4 once one character needs it): charged when seen.
WIDE_STR_EXTRA = sys.getsizeof("\U0001f600") - sys.getsizeof("a")
BYTES_BASE = sys.getsizeof(b"")
SLICE = sys.getsizeof(memoryview(b""))  # records stay zero-copy slices of the frame
UUID = sys.getsizeof(uuid.UUID(int=1)) + sys.getsizeof(2**127)
FLOAT = sys.getsizeof(1.5)
INT = {  # the largest int object each integer type can produce; int8 and bool are cached singletons
    "int8": 0, "bool": 0,
    "int16": sys.getsizeof(2**15 - 1), "uint16": sys.getsizeof(2**16 - 1),
    "int32": sys.getsizeof(2**31 - 1), "uint32": sys.getsizeof(2**32 - 1),
    "int64": sys.getsizeof(2**63 - 1), "float64": FLOAT,
}
DICT_BASE = sys.getsizeof({0: 0})
SET_BASE = sys.getsizeof({0})
# A dict or set entry with its share of the table (load factor 2/3, doubling).
TABLE_ENTRY = 3 * 3 * POINTER
# One unknown tagged field kept as {tag: bytes}: its entry, key and value
# object (the value's content is charged besides).
TAGGED_FIELD_COST = TABLE_ENTRY + INT["uint32"] + BYTES_BASE
UNLIMITED = 1 << 62


class DecodeBudgetError(DecodeError):
    """Decoding would build more objects than the request's budget allows."""


class DecodeBudget:
    """Bytes of objects a decode may still build (``left``), out of
    ``limit`` for a frame of ``frame_size`` bytes. Decoders subtract first
    and call ``check`` (or test ``left < 0`` inline and raise ``exceeded``)."""

    __slots__ = ("left", "limit", "frame_size")

    def __init__(self, limit: int, frame_size: int = 0) -> None:
        self.left = limit
        self.limit = limit
        self.frame_size = frame_size

    @classmethod
    def for_request(cls, frame_size: int) -> DecodeBudget:
        return cls(AMPLIFICATION * frame_size + ALLOWANCE, frame_size)

    @classmethod
    def unlimited(cls) -> DecodeBudget:
        return cls(UNLIMITED)

    @property
    def used(self) -> int:
        return self.limit - self.left

    def charge(self, cost: int, what: str) -> None:
        self.left -= cost
        if self.left < 0:
            raise self.exceeded(what)

    def exceeded(self, what: str) -> DecodeBudgetError:
        return DecodeBudgetError(
            f"{what} would take the decoded objects to {self.used:,} bytes, over the budget of {self.limit:,} "
            f"for a {self.frame_size:,}-byte frame ({AMPLIFICATION} bytes per frame byte + {ALLOWANCE:,})")
