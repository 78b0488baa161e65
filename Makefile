# stencilmap — two commands: `make demo` and `make test` (each sets itself up).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint typecheck unit docs sysdeps opencl sodac clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,docs,nvrtc]'
	touch $(STAMP)

# The main job on a bundled example: the reference run, then `compile` for the KU060 on a grid users run
# (4096×4096, 100 time steps; the code run and the simulation check a scaled grid) — the best design
# under its resources, its HLS C++ run here by g++, the design simulated cycle by cycle, the report.
demo: install sysdeps
	$(BIN)/stencilmap run examples/jacobi2d.soda
	$(BIN)/stencilmap compile examples/jacobi2d.soda --device ku060 --shape 4096,4096 --iterations 100 \
		--out out/jacobi2d/compile

lint: install
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: install
	$(BIN)/mypy

unit: install sysdeps
	$(BIN)/pytest

# System packages, installed with apt-get when missing and possible (root, apt); without them stencilmap
# still works and says what it skipped:
# - PoCL, the OpenCL CPU runtime on which `codegen --target opencl --verify` runs PCM kernels (else the
#   OpenCL tests skip, saying why);
# - Graphviz, which renders `compile`'s design.svg (else the report says it was not rendered).
sysdeps:
	@if [ -e /etc/OpenCL/vendors/pocl.icd ] && command -v dot >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		(apt-get update -qq && apt-get install -y -qq pocl-opencl-icd ocl-icd-libopencl1 graphviz >/dev/null) \
		|| echo "could not install PoCL and Graphviz: the OpenCL tests will skip, design.svg is not rendered"; \
	else echo "PoCL or Graphviz missing (apt-get install pocl-opencl-icd graphviz): OpenCL tests skip, no design.svg"; fi

opencl: sysdeps

test: lint typecheck unit docs

# The documentation site (mkdocs-material; the CLI and API references generated from the commands and
# docstrings), built strictly: a broken link, anchor or reference fails it. Output in site/.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# SODA's own compiler, for benchmarks/sodac_compare.py only (stencilmap never needs it): the release the
# comparison in the README was made with, in a virtual environment of its own (its dependencies pin old
# packages that stencilmap's must not meet).
SODAC_VERSION := 0.0.20220505.dev2
sodac: .sodac/bin/sodac

.sodac/bin/sodac:
	$(PYTHON) -m venv .sodac
	.sodac/bin/pip install --quiet 'sodac==$(SODAC_VERSION)'

clean:
	rm -rf $(VENV) .sodac out .pytest_cache .mypy_cache .ruff_cache
