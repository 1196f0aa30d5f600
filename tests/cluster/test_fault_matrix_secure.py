"""The fault matrix's kill -9 cases on a secured cluster (``kavka up
--secure``'s: SASL_SSL with SCRAM-SHA-512 for clients and between brokers,
the ACL authorizer on): kill -9 of the leader of a partition and of the
controller, with an idempotent acks=all producer and a live consumer over
SASL_SSL, lose nothing and leave identical replicas. Every byte between
brokers (follower fetches, LeaderAndIsr/UpdateMetadata, transaction
markers) goes over TLS after a SCRAM exchange with the brokers' own user,
so a replica that could not authenticate or a controller that could not
reach a broker would show up here as lost writes, a stuck ISR or
replicas that differ.

The cases are test_fault_matrix's own (``run_case``), on a cluster of
their own.
"""

from __future__ import annotations

import pytest

from .fault_helpers import matrix_cluster
from .test_fault_matrix import CONFIG, run_case

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def secure_cluster(zk_server, tmp_path_factory):
    with matrix_cluster(zk_server.connect_string, tmp_path_factory.mktemp("faultmatrix-secure"),
                        "faultmatrix-secure", CONFIG, secure=True) as c:
        yield c


@pytest.mark.parametrize("target", ["leader", "controller"])
def test_kill_9_over_sasl_ssl_loses_no_acknowledged_write(secure_cluster, target):
    run_case(secure_cluster, "kill_9", target, "on", prefix="fms")
