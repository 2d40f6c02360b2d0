# Set-up and everyday commands. `make demo` and `make test` create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: venv demo test test-slow lint bench docs clean clean-cache

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) -m treeboost study --out study-demo

# the suite in TEST_WORKERS processes (pytest-xdist), each compiling the kernels its
# tests need into the shared kernel cache; work stealing evens out their ends
TEST_WORKERS ?= 2

test: venv
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15

# the longer tests (marked slow: real data sets against the peers, killed processes, Dask
# clusters, the CUDA simulator on whole fits), kept out of `make test`'s 10 minutes; one
# process: side by side on two cores, a Dask cluster's fit held up an interrupted study's
# exit past the 8 s its test allows (9.2 s)
test-slow: venv
	$(PY) -m pytest -q -n 0 -m 'slow and not fresh_compile' --durations=10

lint: venv
	$(PY) -m pip install --quiet ruff
	$(VENV)/bin/ruff check src tests benchmarks

bench: venv
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/bench_end_to_end.py

$(VENV)/.docs-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $@

# the site (docs/, Sphinx) with warnings as errors, then every example on its pages and
# in the docstrings it shows run by the doctest builder; the API pages are generated
# into docs/generated/, the site into docs/_build/html
docs: $(VENV)/.docs-installed
	$(VENV)/bin/sphinx-build -W --keep-going -b html -d docs/_build/doctrees docs docs/_build/html
	$(VENV)/bin/sphinx-build -W --keep-going -b doctest -d docs/_build/doctrees docs docs/_build/doctest

clean: clean-cache
	rm -rf $(VENV) build *.egg-info src/*.egg-info docs/_build docs/generated

# Numba's on-disk cache of compiled kernels (stale after editing a kernel others call)
clean-cache:
	find src -name '*.nbi' -delete -o -name '*.nbc' -delete -o -name '*.nbi.lock' -delete
