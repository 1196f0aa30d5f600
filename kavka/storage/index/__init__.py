"""The per-segment index files (seed 002 §5.3 (3); Kafka's on-disk format).

``index_file`` (``IndexFile``: the preallocated, mmapped array of
fixed-size entries and its binary search) under ``offset_index``
(``<base>.index``, 8-byte relative offset -> position entries) and
``time_index`` (``<base>.timeindex``, 12-byte timestamp -> relative offset
entries), each held by a segment through ``lazy_index`` (``LazyIndex``:
opened and mapped on first use, released when the segment stops being
written, Kafka's LazyIndex); ``transaction_index`` (``<base>.txnindex``,
the aborted transactions of KIP-98, read by read_committed fetches).
"""
