"""The fixed-size big-endian layouts of the Kafka protocol's primitive
types, defined once for the readers (``primitives``) and writers
(``writers``). Immutable; any thread."""

from __future__ import annotations

import struct

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")
