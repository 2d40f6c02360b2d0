# Set-up and everyday commands. `make demo` and `make test` create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: venv demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) -m treeboost study --out study-demo

test: venv
	$(PY) -m pytest -q

lint: venv
	$(PY) -m pip install --quiet ruff
	$(VENV)/bin/ruff check src tests benchmarks

bench: venv
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/bench_end_to_end.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
