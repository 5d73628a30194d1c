# The commands people expect. Everything installs into .venv from PyPI on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SOURCES := pyproject.toml $(shell find portcheck rules templates -type f -not -name '*.pyc' 2>/dev/null)

.PHONY: install toolchain demo test lint bench clean

toolchain:
	@bash scripts/install-toolchain.sh

$(STAMP): $(SOURCES)
	@bash scripts/install-toolchain.sh
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "python3 -m venv failed: on Debian run 'apt-get install -y python3-venv'"; exit 1; }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/portcheck scan examples/heatflow

# Lint and types first: CI (.ci/run) runs this target, so they gate every change.
test: $(STAMP) toolchain lint
	HIP_PLATFORM=amd $(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check portcheck tests tools
	$(VENV)/bin/ruff format --check portcheck
	$(VENV)/bin/mypy

# Real trees to time as well, e.g. make bench BENCH_TREES=/path/to/cuda-samples
BENCH_TREES ?= examples/heatflow
bench: $(STAMP)
	$(PY) benchmarks/bench_scan.py $(BENCH_TREES) --markdown

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .mypy_cache
