"""``border: preserve`` on a stencil that does not read its centre (the OpenCL paper's Laplace solver,
``0.25f * (v(0,-1) + v(-1,0) + v(1,0) + v(0,1))``): the hardware taps the centre from its window or shift
register anyway (``analysis.windows.access_sets``), so every architecture, and host backend (the code targets: ``tests/codegen/test_features.py``)
keeps the border's values over several iterations, bit-exact against the reference."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stencilmap.analysis.halos import defined_halo
from stencilmap.analysis.windows import access_sets
from stencilmap.backends.reference import run_reference
from stencilmap.backends.registry import HostOptions, execute
from stencilmap.program.ir import Boundary, Program
from tests.backends.common import assert_matches
from tests.sim.helpers import built, explain, inputs_for, lanes_config, run_design, soda

LAPLACE = """\
kernel: laplace_preserve
burst width: 64
unroll factor: 2
input float: v(20, *)
output float: w(0, 0) = 0.25f * (v(0, -1) + v(-1, 0) + v(1, 0) + v(0, 1))
iterate: 3
border: preserve
"""


def test_the_window_taps_the_kept_centre() -> None:
    program = soda(LAPLACE, (12, 20))
    (st,) = program.stencils
    assert (0, 0) not in access_sets(st)["v"]  # the expression alone does not read it
    assert (0, 0) in access_sets(st, program)["v"]


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_simulated_on_every_architecture_with_iterations(arch: str) -> None:
    program = soda(LAPLACE, (12, 20))
    run = run_design(*built(program, arch, lanes_config(arch, 2, iterate=3)))
    assert run.validation.valid and run.validation.bit_exact, explain(run)
    assert run.program.iterate == 3


@pytest.mark.parametrize("which", ["laplace", "mixed-copy"])
@pytest.mark.parametrize("backend", ["cpu", "dask"])
def test_host_backends(backend: str, which: str) -> None:
    if backend == "dask":
        pytest.importorskip("distributed")
    program = soda(LAPLACE, (12, 20)) if which == "laplace" else mixed("copy")
    values = inputs_for(program)
    options = HostOptions(backend, chunks=(6, 10)) if backend == "dask" else HostOptions(backend, threads=2)
    got = execute(program, values, options).result
    assert_matches(program, run_reference(program, values), got, exact=True)


MIXED = """\
kernel: mixed
burst width: 64
unroll factor: 2
input float: v(20, *)
local float: t(0, 0) = v(1, 0) - v(-1, 0) * 0.5f
output float: w(0, 0) = 0.25f * (t(0, -1) + t(0, 1) + v(1, 0) + v(0, -1))
iterate: 3
border: preserve
"""


def mixed(kind: str) -> Program:
    """w reads v with a ``constant``/``copy`` boundary (defined outside the grid) and t with ``shrink``: the
    kept ring is what t's shrink leaves (``defined_halo``), not w's whole window."""
    p = soda(MIXED, (10, 20))
    w = p.stencil("w")
    assert w is not None
    w = replace(w, boundary=(("t", Boundary("shrink")), ("v", Boundary(kind, 0.25))))
    return replace(p, stencils=tuple(w if s.name == "w" else s for s in p.stencils))


@pytest.mark.parametrize("kind", ["constant", "copy"])
@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_preserve_with_constant_and_copy_boundaries(kind: str, arch: str) -> None:
    program = mixed(kind)
    halo = defined_halo(program, "w")
    assert halo is not None and halo.low == halo.high == (1, 1)  # t: ±1 along x; w reads t at ±1 along y
    run = run_design(*built(program, arch, lanes_config(arch, 2, iterate=3)))
    assert run.validation.valid and run.validation.bit_exact, explain(run)
