"""``KavkaDataSource``: format ``"kavka"``, Spark's Kafka source and sink
over Kavka, as a PySpark Python Data Source.

Spark builds one per query from the options (lower-cased keys, string
values) and asks it for a schema, a batch or stream reader, or a batch or
stream writer; each of those runs in some Spark Python process (see
``kavka.spark`` for the map). Options are parsed here so that a bad one
fails when the query is defined or started, with a ``KavkaOptionError``
message (``kavka.spark.options``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

from kavka.spark.options import parse_sink_options, parse_source_options
from kavka.spark.schema import read_schema

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from kavka.spark.batch_reader import KavkaBatchReader
    from kavka.spark.batch_writer import KavkaBatchWriter
    from kavka.spark.stream_reader import KavkaStreamReader
    from kavka.spark.stream_writer import KavkaStreamWriter

# Each reader and writer is imported by the method that builds it: every
# Python process Spark starts for a query imports this module (a streaming
# query's planning runner is a fresh interpreter per query), and a reading
# query has no use for the sink's modules, nor a stream for the batch ones.


class KavkaDataSource(DataSource):
    """See the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "kavka"

    def _include_headers(self) -> bool:
        return str(self.options.get("includeHeaders", self.options.get("includeheaders", "false"))).strip().lower() \
            == "true"

    def schema(self) -> StructType:
        return read_schema(self._include_headers())

    def reader(self, schema: StructType) -> KavkaBatchReader:
        from kavka.spark.batch_reader import KavkaBatchReader

        return KavkaBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> KavkaStreamReader:
        from kavka.spark.stream_reader import KavkaStreamReader

        return KavkaStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> KavkaBatchWriter:
        from kavka.spark.batch_writer import KavkaBatchWriter
        from kavka.spark.writer_rows import check_sink_schema

        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return KavkaBatchWriter(options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KavkaStreamWriter:
        from kavka.spark.stream_writer import KavkaStreamWriter
        from kavka.spark.writer_rows import check_sink_schema

        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return KavkaStreamWriter(options, schema)
