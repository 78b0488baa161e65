"""What NVIDIA's compiler makes of the gpu backend's kernels, without a GPU (issue 26 item 6): per program and
``gpu.Tuning``, the registers a thread (the largest of its kernels), spilled bytes, and the global loads a point
of the busiest kernel's interior loop, from NVRTC's PTX and ptxas's report (``backends.nvrtc``).

Usage: .venv/bin/python benchmarks/gpu_static.py [--arch sm_90] [--all]

Rows: the gpu bench's one-step 3-D 7-point Jacobi (512³) and 2-D 5-point (8192²), the examples' stars and box,
and contrast.soda's 225-term window (``--all``: every bundled program), each with the default tuning, the
interior unrolled by 2, and the register queue (``rotate``). These are facts of the code, not speeds: which
of them is faster is for ``benchmarks/gpu_bench.py`` on a device. Needs the ``nvrtc`` extra (``make`` installs
it); without it, prints why and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

PICKED = ("jacobi2d_9pt.soda", "star3d_degree2.soda", "star3d_degree3.soda", "contrast.soda")


def programs(everything: bool) -> list[tuple[str, Any]]:
    import gpu_bench
    from tests.backends.common import BUNDLED, load_bound

    out = [
        ("gpu_bench 3-D 7-pt 512³", gpu_bench.program(gpu_bench.J3D, (512, 512, 512), 1)),
        ("gpu_bench 2-D 5-pt 8192²", gpu_bench.program(gpu_bench.J2D, (8192, 8192), 1)),
    ]
    return out + [(p.name, load_bound(p)) for p in BUNDLED if everything or p.name in PICKED]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90", help="the architecture NVRTC compiles for (default sm_90)")
    parser.add_argument("--all", action="store_true", help="every bundled program, not a chosen few")
    args = parser.parse_args()
    from stencilmap.backends.cexpr import Unsupported
    from stencilmap.backends.gpu import Tuning, cuda_source
    from stencilmap.backends.nvrtc import nvrtc_compile, nvrtc_missing, nvrtc_version
    from stencilmap.backends.plan import make_plan

    if nvrtc_missing():
        print(f"gpu_static: skipped ({nvrtc_missing()})")
        return 0
    tunings = {"default": Tuning(), "unroll=2": Tuning(unroll=2), "rotate": Tuning(rotate=True)}
    print(
        f"NVRTC {nvrtc_version()} for {args.arch}: registers a thread (largest kernel), spilled bytes, loads a"
    )
    print("point in the busiest interior loop")
    print(f"{'program':28s} {'tuning':9s} {'registers':>9s} {'spilled':>8s} {'loads/pt':>9s}")
    for name, program in programs(args.all):
        try:
            plan = make_plan(program)
        except Unsupported as exc:
            print(f"{name:28s} not run: {exc}")
            continue
        for label, tuning in tunings.items():
            build = nvrtc_compile(cuda_source(plan, tuning), args.arch)
            regs = max(k.registers for k in build.kernels)
            spilled = sum(k.spill_stores + k.spill_loads for k in build.kernels)
            per_point = build.loop_loads() / tuning.unroll
            print(f"{name:28s} {label:9s} {regs:9d} {spilled:8d} {per_point:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
