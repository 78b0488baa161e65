"""The cpu backend's gcc flags, old against new (issue 26 item 4): compiler CPU seconds and kernel GCell/s.

Usage: .venv/bin/python benchmarks/compile_flags.py "old|new" [PROGRAMS] [ROUNDS]

"old" is the flag set before issue 26's compile-time flags (``--param vect-epilogues-nomask=0`` alone),
"new" is ``cpu.GCC_FLAGS``. Each program (names below, comma-separated; default all) is compiled with each
set in one process (fresh cache), then the kernels run ROUNDS times (default 3), the sets interleaved; the
best time counts, and every output is asserted equal to the old set's, bit for bit.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
C = os.environ.get("STENCILMAP_CORPUS", "/work/shared/corpus") + "/"
progs = {
    "jacobi2d": (str(EXAMPLES / "jacobi2d.soda"), (4096, 4096), 50),
    "jacobi3d": (str(EXAMPLES / "jacobi3d.soda"), (256, 256, 256), 20),
    "jac2d9": (str(EXAMPLES / "jacobi2d_9pt.soda"), (4096, 4096), 20),
    "contrast": (C + "soda/contrast.soda", (2048, 2048), 1),
    "denoise2d": (C + "soda/denoise2d.soda", (2048, 2048), 1),
    "denoise3d": (C + "soda/denoise3d.soda", (160, 160, 160), 1),
    "delaybuf": (C + "stencilflow/simple_input_delay_buf.json", (160, 160, 160), 1),
    "j3d8": (C + "stencilflow/jacobi3d_32x32x32_8itr.json", (160, 160, 160), 1),
    "tridiag": (C + "stencilflow/tridiagonal_solve.json", (160, 160, 160), 1),
    "hdiff": (str(EXAMPLES / "stencilflow_hdiff_like.json"), None, 1),
    "xcorr": (C + "soda/xcorr.soda", None, None),
}


def main() -> None:
    os.environ["STENCILMAP_CACHE_DIR"] = tempfile.mkdtemp(prefix="compile-flags-")
    from stencilmap.backends import cpu
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape

    sel = sys.argv[2].split(",") if len(sys.argv) > 2 else list(progs)
    variants = [v.split() for v in sys.argv[1].split("|")]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    base = cpu.FLAGS
    new_gcc = cpu.GCC_FLAGS
    cps = {}
    for name in sel:
        path, shape, it = progs[name]
        p = load_program(path)
        if shape is None:
            rank = p.rank
            e = round((1 << 22) ** (1 / rank))
            shape = (e,) * rank
        p = bind_shape(p, {}, shape[: p.rank] if len(shape) >= p.rank else None)
        if it is not None:
            p = replace(p, iterate=it)
        rng = np.random.default_rng(0)
        vals = {
            i.name: rng.uniform(0.5, 1.5, tuple(p.shape[a] for a in i.axes)).astype(i.dtype) for i in p.inputs
        }
        vals.update({q.name: rng.uniform(0.5, 1.5, q.shape).astype(q.dtype) for q in p.params})
        for vi, v in enumerate(variants):
            if v == ["old"]:
                cpu.FLAGS, cpu.GCC_FLAGS = base, ("--param", "vect-epilogues-nomask=0")
            else:
                cpu.FLAGS, cpu.GCC_FLAGS = base, new_gcc
            cpu._PROGRAMS.clear()
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cp = cpu.compile_program(p)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cps[name, vi] = (cp, p, vals, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    best = {}
    ref = {}
    for _ in range(rounds):
        for name in sel:
            for vi in range(len(variants)):
                cp, p, vals, _ = cps[name, vi]
                cpu._PROGRAMS.clear()
                cpu._PROGRAMS[p.with_shape(tuple(0 for _ in p.shape))] = cp
                res, t = cpu.run_cpu(p, vals)
                best[name, vi] = min(best.get((name, vi), 1e9), t.compute_seconds)
                if vi == 0:
                    ref[name] = res
                else:
                    for o in res.outputs:
                        assert np.array_equal(res.outputs[o], ref[name].outputs[o], equal_nan=True), (
                            name,
                            vi,
                        )
    for name in sel:
        cells = np.prod(cps[name, 0][1].shape) * cps[name, 0][1].iterate
        print(
            f"{name:10}",
            "  ".join(
                f"[v{vi}] gcc {cps[name, vi][3]:.2f}s {cells / best[name, vi] / 1e9:.3f} GC/s"
                for vi in range(len(variants))
            ),
        )
    for vi, v in enumerate(variants):
        print(f"v{vi}: {' '.join(v)}")
    print(os.getloadavg())


if __name__ == "__main__":
    main()
