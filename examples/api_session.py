"""A session with stencilmap's Python API (run it: `.venv/bin/python examples/api_session.py [OUT_DIR]`).

Load a program, run it on the host, build a SODA design, simulate it cycle by cycle against the reference,
predict it on a device, search the design space, generate and verify HLS C++, and do all of it in one
`compile` call with its report.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import stencilmap as sm

HERE = Path(__file__).resolve().parent


def main(out: Path) -> None:
    # 1. a program, from its file or from text, bound to a grid (C order: rows, columns)
    prog = sm.load(HERE / "jacobi2d.soda", shape=(64, 64))
    blur = sm.load(
        "kernel: blur\nburst width: 512\nunroll factor: 2\n"
        "input dram 0 float: a(32, *)\n"
        "output dram 1 float: b(0, 0) = (a(-1, 0) + a(0, 0) + a(1, 0)) / 3\n"
        "iterate: 1\nborder: ignore\n",
        shape=(16, 32),
    )
    print(f"loaded {prog.name} {prog.shape} and {blur.name} {blur.shape}")

    # 2. the reference executor and the compiled CPU backend agree bit for bit
    v = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    ref = sm.run(prog, {"v": v}).outputs["w"]
    cpu = sm.run(prog, {"v": v}, backend="cpu").outputs["w"]
    print("cpu backend equals the reference:", bool(np.array_equal(ref, cpu, equal_nan=True)))

    # 3. a SODA design (k = 2 PEs per stage), simulated with the KU060's memory bandwidth
    design = sm.build(prog, "soda", unroll=2)
    sim = sm.simulate(prog, design, {"v": v}, device="ku060")
    worst = max(sim.stalls.items(), key=lambda kv: sum(kv[1]))
    print(f"simulated: valid={sim.valid}, {sim.cycles} cycles (model {sim.predicted_cycles}); "
          f"most stalled module {worst[0]} (starved, blocked) = {worst[1]}")  # fmt: skip

    # 4. the model's prediction of that configuration for 100 time steps, and the design-space search
    est = sm.estimate(prog, "ku060", "soda", unroll=2, iterations=100)
    print(f"estimate: {est.predicted_seconds * 1e6:.1f} µs, {est.scenario}-bound")
    best = sm.explore(prog, "ku060", iterations=100, simulate=False).best
    assert best is not None
    print(f"explore: best {best.arch} lanes={best.lanes} q={best.iterate}, {best.predicted_seconds * 1e6:.1f} µs")

    # 5. HLS C++ for the design, compiled with g++ and run here against the reference
    code = sm.codegen(design, "hls", out / "code", verify=True)
    assert code.verification is not None
    print(f"codegen: {len(code.files)} files, C simulation valid={code.verification.valid}")

    # 6. the whole job, with its report (report.md, report.html, design.json, plots, code)
    job = sm.compile(prog, "ku060", out / "compile")
    print(f"compile: {job.choice.arch} {dict(job.choice.parameters)}, report in {job.out_dir / 'report.html'}")

    # 7. errors are stencilmap.Error, worded for the API
    try:
        sm.build(prog, "soda", unroll=0)
    except sm.Error as exc:
        print("error:", exc)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
