# The C extension built from _crc32c.c (see kavka.protocol.records.batch.crc32c).
from kavka.protocol.buffers import Buffer

FOLDING: int

def crc32c(data: Buffer, value: int = 0, /) -> int: ...
