"""The Python API: ``stencilmap.run(program, inputs, backend=..., iterate=..., threads=...)``.

Imports of the program front ends and backends happen inside the call, so ``import stencilmap`` stays light.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stencilmap.backends.reference import Result
    from stencilmap.program.ir import Program


def run(
    program: str | Path | Program,
    inputs: Mapping[str, Any] | None = None,
    *,
    backend: str = "numpy",
    iterate: int | None = None,
    threads: int | None = None,
    shape: tuple[int, ...] | None = None,
    seed: int = 0,
    chunks: tuple[int, ...] | None = None,
    scheduler: str | None = None,
) -> Result:
    """Run a program (a path to a ``.soda``/``.json`` file, or a Program) on a host backend.

    ``inputs`` maps input (and param) names to arrays in C order; the others are generated from ``seed``
    as ``stencilmap run`` does. Returns the outputs (undefined points NaN or 0) and their definedness masks.

    >>> import stencilmap as sm
    >>> res = sm.run("examples/jacobi2d.soda", backend="cpu", iterate=10)  # doctest: +SKIP
    >>> res.outputs["w"].shape  # doctest: +SKIP
    (64, 64)
    """
    import numpy as np

    from stencilmap.backends.registry import HostOptions, execute
    from stencilmap.jobs.run import with_iterate
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape, make_inputs
    from stencilmap.program.ir import Program as ProgramIR
    from stencilmap.program.verify import verify

    prog = program if isinstance(program, ProgramIR) else load_program(program)
    if isinstance(program, ProgramIR):
        verify(prog)
    prog = with_iterate(prog, iterate)
    supplied = {k: np.asarray(v) for k, v in (inputs or {}).items()}
    prog = bind_shape(prog, supplied, shape)
    values = make_inputs(prog, supplied, seed)
    return execute(prog, values, HostOptions(backend, threads, chunks, scheduler)).result
