"""PySpark's automatic discovery hook for format "kavka".

PySpark (4.x) imports every top-level module whose name starts with
``pyspark_`` and registers its ``DefaultSource`` (a ``DataSource``
subclass) under that class's ``name()``. This module only points there.
"""

from kavka.spark.source import KavkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
