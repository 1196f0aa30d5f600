"""The log cleaner: compaction of ``compact`` topics (seed 002 §5.4.2;
Kafka's LogCleaner).

``thread`` (``LogCleaner``: the cleaner threads the log manager owns, one
round = clean the filthiest log, then retention of compacted logs),
``manager`` (``LogCleanerManager``: which log to clean next, the cleaning
state of every log, the ``cleaner-offset-checkpoint``), ``cleaner``
(``Cleaner``: one pass over one log, steps (2)-(6)), ``offset_map`` (the
key -> latest offset map), ``keys`` (key-only reading of a batch),
``segments`` (batch-by-batch reading and grouping of segments),
``transactions`` (aborted data and markers while cleaning, KIP-98) and
``config`` (the ``log.cleaner.*`` settings).
"""
