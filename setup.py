"""Build of kavka's C extensions (everything else is in pyproject.toml):

* ``kavka.spark._recordcols`` — the Spark reader's record decoder;
* ``kavka.protocol.records._validate`` — the leader's record walk (Kafka's
  LogValidator, see ``kavka.protocol.records.validation``);
* ``kavka.protocol.records._crc32c`` — CRC32C by carry-less multiplication
  folding where the CPU has it (``kavka.protocol.records.batch``).

``optional=True``: a machine without a C compiler or Python headers still
installs Kavka; ``kavka.spark.arrow_records`` and
``kavka.protocol.records.validation`` then fall back to their Python paths
(and ``batch`` to the ``crc32c`` package)
(tests fail where a compiler exists and a build did not happen)."""

from setuptools import Extension, setup

_FLAGS = ["-O2", "-std=c11"]

setup(ext_modules=[
    Extension("kavka.spark._recordcols", ["kavka/spark/_recordcols.c"], optional=True, extra_compile_args=_FLAGS),
    Extension("kavka.protocol.records._validate", ["kavka/protocol/records/_validate.c"], optional=True,
              extra_compile_args=_FLAGS),
    Extension("kavka.protocol.records._crc32c", ["kavka/protocol/records/_crc32c.c"], optional=True,
              extra_compile_args=_FLAGS),
])
