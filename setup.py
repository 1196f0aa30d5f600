"""Build of kavka's one C extension, ``kavka.spark._recordcols`` (the Spark
reader's record decoder; everything else is in pyproject.toml).

``optional=True``: a machine without a C compiler or Python headers still
installs Kavka; ``kavka.spark.arrow_records`` then falls back to its Python
decoding path."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("kavka.spark._recordcols", ["kavka/spark/_recordcols.c"], optional=True,
                             extra_compile_args=["-O2", "-std=c11"])])
