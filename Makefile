# stencilmap — two commands: `make demo` and `make test` (each sets itself up).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint typecheck unit clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# The main job on a bundled example: the reference run, then the SODA design built from it, simulated
# cycle by cycle on the KU060's memory bandwidth and checked against the reference.
demo: install
	$(BIN)/stencilmap run examples/jacobi2d.soda
	$(BIN)/stencilmap simulate examples/jacobi2d.soda --device ku060

lint: install
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
