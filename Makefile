# Fresh machine: `make demo` runs hiersql on the demo data, `make test` runs the linter and the tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m compileall -q hiersql  # as a wheel install would: no start-up compiling, also where PYTHONDONTWRITEBYTECODE is set
	$(PY) -c "from hiersql.measures.lca import hemkit, load_kernels; hemkit.load_kernel(); load_kernels()"  # the LCA kernels (HEMKit's, the greedy graphs') compiled into numba's cache once (~40 s), not in the first run that needs them
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/hiersql demo

lint: $(STAMP)
	$(VENV)/bin/ruff check hiersql tests benchmarks

# pytest-xdist: the tests spread over WORKERS processes, each half of the collection, an idle worker taking
# half of the other's queue (worksteal); a worker starts its own SparkSession and PostgreSQL server when a test
# first needs one. Groups that kept every Spark or PostgreSQL test in one worker left a core idle (RESULTS.md).
WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -n $(WORKERS) --dist worksteal --durations=25

test: lint
	$(PYTEST)

test-fast: lint  # without the PostgreSQL and Spark engine tests
	$(PYTEST) -m "not spark and not postgres"

bench: $(STAMP)
	$(PY) benchmarks/bench_foundation.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
