# Quick start: `make demo` and `make test` on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m deepsharp demo

test: $(STAMP)
	$(PY) -m pytest -n 2 -q

# The tests marked heavy (over a minute, or gigabytes: a graph past 2 GiB), left out of `make test`.
test-slow: $(STAMP)
	$(PY) -m pytest -q -m heavy

# Side-by-side speed with PyTorch on this CPU (installs the pinned CPU build of torch, numba and
# threadpoolctl): CPU time at 1 thread and wall time at 2 threads, see docs/performance.md.
bench: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info
