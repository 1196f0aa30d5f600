"""The transaction APIs Kavka advertises cover every version the real
clients were measured sending (``tests/protocol/golden/versions.json``),
and never more than the
schema table can encode: kafka-python infers the broker's version from the
advertised maxima, so an API advertised beyond what is served would make it
send requests nobody can answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kavka.protocol.schema import registry
from kavka.server.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    end_txn,
    init_producer_id,
    txn_offset_commit,
    write_txn_markers,
)

HANDLERS = [init_producer_id, add_partitions_to_txn, add_offsets_to_txn, end_txn, write_txn_markers,
            txn_offset_commit]
SENT = json.loads((Path(__file__).parents[1] / "protocol" / "golden" / "versions.json").read_text())


@pytest.mark.parametrize("module", HANDLERS, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_advertised_range_covers_clients_and_fits_the_schema(module):
    api = registry()[module.API_KEY]
    assert api.min_version <= module.MIN_VERSION <= module.MAX_VERSION <= api.max_version
    sent = {(client, v) for client, apis in SENT.items() for name, versions in apis.items()
            if int(name.split()[0]) == module.API_KEY for v in versions}
    outside = {(c, v) for c, v in sent if not module.MIN_VERSION <= v <= module.MAX_VERSION}
    assert not outside, f"{api.name} v{module.MIN_VERSION}-{module.MAX_VERSION} misses what clients send: {outside}"
    if module is not write_txn_markers:  # only brokers send WriteTxnMarkers
        assert sent, f"no client was measured sending {api.name}"
