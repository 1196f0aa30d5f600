"""``Buffer``: what the protocol's readers read from and its writers may
hand out (a frame as received, a slice of one, an encoded part).

Decoders keep ``records`` as zero-copy slices of the frame, so any of the
three types can reach the caller. (``collections.abc.Buffer`` needs Python
3.12.)
"""

from __future__ import annotations

from typing import TypeAlias

Buffer: TypeAlias = bytes | bytearray | memoryview
