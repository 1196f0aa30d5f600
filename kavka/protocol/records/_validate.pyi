# The C extension built from _validate.c (see kavka.protocol.records.validation).
from kavka.protocol.buffers import Buffer

def walk_records(
    section: Buffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    has_fixed_ts: bool,
    fixed_ts: int,
    key_message: str | None,
    ts_mode: int,
    ts_lo: int,
    ts_hi: int,
    ts_message: str | None,
    max_errors: int,
    /,
) -> tuple[int, int, int, list[tuple[int, int, str]] | None]: ...
