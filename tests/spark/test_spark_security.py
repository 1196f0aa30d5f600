"""Format "kavka" over SASL_SSL: a secured cluster of its own (``kavka up
--secure``'s: TLS, SCRAM-SHA-512, ACLs) and the security options as Spark's
Kafka source documents them (Java's names: ``kafka.security.protocol``,
``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``,
``kafka.ssl.truststore.*``). The source's reader (Kavka's client) and the
streaming sink (librdkafka's transactional producer, and Kavka's client for
the sink's commit log) all authenticate; without the options nothing is
read."""

from __future__ import annotations

import pytest

from tests.spark.conftest import create_topic, produce, read_all

pytestmark = pytest.mark.spark

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="client" password="{}";'


@pytest.fixture(scope="module")
def secure_cluster(make_module_cluster):
    return make_module_cluster(1, secure=True)


def security_options(cluster) -> dict[str, str]:
    s = cluster.secure
    return {"kafka.bootstrap.servers": cluster.bootstrap, "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.jaas.config": JAAS.format(s.passwords["client"]),
            "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": str(s.pki.ca)}


def test_batch_source_over_sasl_ssl(spark, secure_cluster):
    create_topic(secure_cluster, "sec-src", partitions=2)
    produce(secure_cluster, "sec-src", [(b"k%d" % i, b"v%d" % i) for i in range(200)])
    rows = (spark.read.format("kavka").options(**security_options(secure_cluster)).option("subscribe", "sec-src")
            .load().select("key", "value").collect())
    assert sorted((bytes(r.key), bytes(r.value)) for r in rows) == sorted((b"k%d" % i, b"v%d" % i) for i in range(200))
    # the same read without the security options cannot connect
    with pytest.raises(Exception, match="(?i)closed|connect|timed out"):
        (spark.read.format("kavka").option("kafka.bootstrap.servers", secure_cluster.bootstrap)
         .option("kafka.default.api.timeout.ms", "3000").option("kafka.request.timeout.ms", "2000")
         .option("subscribe", "sec-src").load().collect())


def test_streaming_sink_over_sasl_ssl(spark, secure_cluster, checkpoint_dir):
    create_topic(secure_cluster, "sec-in", partitions=2)
    create_topic(secure_cluster, "sec-out", partitions=2)
    produce(secure_cluster, "sec-in", [(b"k%d" % i, b"v%d" % i) for i in range(300)])
    opts = security_options(secure_cluster)
    df = (spark.readStream.format("kavka").options(**opts).option("subscribe", "sec-in")
          .option("startingOffsets", "earliest").load().select("key", "value"))
    query = (df.writeStream.format("kavka").options(**opts).option("topic", "sec-out")
             .option("checkpointLocation", checkpoint_dir).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert not query.isActive, "the availableNow query did not finish in 120 s"
    assert query.exception() is None, query.exception()
    out = read_all(secure_cluster, "sec-out", committed=True)
    assert sorted((m.key(), m.value()) for m in out) == sorted((b"k%d" % i, b"v%d" % i) for i in range(300))
