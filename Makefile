# stencilmap — two commands: `make demo` and `make test` (each sets itself up).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint typecheck unit opencl clean

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

unit: install opencl
	$(BIN)/pytest

# PoCL, the OpenCL CPU runtime on which `codegen --target opencl --verify` runs PCM kernels. Installed with
# apt-get when missing and possible (root, apt); otherwise the OpenCL tests skip, saying why.
opencl:
	@if [ -e /etc/OpenCL/vendors/pocl.icd ]; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		(apt-get update -qq && apt-get install -y -qq pocl-opencl-icd ocl-icd-libopencl1 >/dev/null) \
		|| echo "could not install PoCL: the OpenCL tests will skip"; \
	else echo "PoCL missing (apt-get install pocl-opencl-icd): the OpenCL tests will skip"; fi

test: lint typecheck unit

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
