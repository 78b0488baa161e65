"""Multi-FPGA scaling of StencilFlow Jacobi 3-D chains (StencilFlow §VIII-C, Table I, Fig. 14–15).

Usage: .venv/bin/python benchmarks/partition_scaling.py [--corpus DIR] [--markdown] [--sim]

Chains of n Jacobi 3-D stencils (corpus ``jacobi3d_32x32x32_8itr.json``, 8 stencils, chained n / 8
times) split over 1, 2 and 4 devices of ``--device`` (default stratix10, the 520N of §VIII-B) with
``--devices`` (least cut, ``design.partition``), predicted on the paper's 2¹⁵×32×32 domain at W = 1
(Fig. 14): stencils per device, streams cut, whether every device fits, the predicted cycles and the
kernel's GOp/s (the operations over the cycles at the device clock, as the paper's C / f), next to the
paper's Fig. 14 point at that chain length. ``--sim`` adds shorter chains simulated on a 16³ grid:
the simulator's cycles next to the model's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from table import print_table

import stencilmap as sm
from stencilmap.design.common import with_iterate
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError
from stencilmap.jobs.partition import partition
from stencilmap.model.report import EstimateReport
from stencilmap.model.timing import memory_rate, predicted_cycles
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.sim import SimConfig, simulate

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
JACOBI = "stencilflow/jacobi3d_32x32x32_8itr.json"
DOMAIN = (2**15, 32, 32)  # Fig. 14 / 15: 2^15 x 32 x 32
#: StencilFlow Fig. 14 (FP32, W = 1, 8 Op/stencil): GOp/s by stencils in the chain (Op/cycle / 8); the
#: single-device points up to 112 stencils, then 2, 4 and 8 FPGAs (224, 448, 896 stencils).
PAPER_FIG14 = {16: 40, 32: 79, 48: 118, 64: 153, 80: 198, 96: 232, 112: 264, 224: 388, 448: 771, 896: 1537}
COLUMNS = (
    "stencils",
    "devices",
    "per device",
    "cut",
    "fits",
    "cycles",
    "GOp/s",
    "GOp/s @8 Op",
    "paper GOp/s",
)
LINK_COLUMNS = ("W", "devices", "link rate (beats/cycle)", "cycles", "GOp/s", "GOp/s @8 Op")
SIM_COLUMNS = ("stencils", "devices", "cut", "simulated cycles", "predicted cycles", "error")


def model_rows(corpus: Path, device: str, lengths: tuple[int, ...]) -> list[tuple[str, ...]]:
    out = []
    for n in lengths:
        for k in (1, 2, 4):
            try:
                r = sm.estimate(_jacobi(corpus), device, "stencilflow", iterate=n // 8, devices=k)
            except StencilmapError as exc:
                out.append((str(n), str(k), "-", "-", "no", "-", "-", "-", _paper(n, k)))
                assert "does not fit" in exc.message, exc.message
                continue
            p = r.partition
            assert p is not None
            gops, paper_ops = _gops(r, n)
            per = "/".join(str(len(part.stencils)) for part in p.parts)
            fits = "yes" if all(part.resources.fits for part in p.parts) else "no"
            out.append((str(n), str(k), per, str(p.streams_cut), fits, f"{r.predicted_cycles:,}", f"{gops:,.0f}",
                        f"{paper_ops:,.0f}", _paper(n, k)))  # fmt: skip
    return out


def _jacobi(corpus: Path) -> sm.Program:
    """The corpus Jacobi 3-D program on the paper's 2^15 x 32 x 32 domain."""
    return sm.load(corpus / JACOBI, shape=DOMAIN)


def _gops(r: EstimateReport, stencils: int) -> tuple[float, float]:
    """The kernel's GOp/s (operations over the predicted cycles at the clock), counting stencilmap's
    operations and the paper's 8 Op per Jacobi stencil (Fig. 14)."""
    seconds = r.predicted_cycles / (r.clock_mhz * 1e6)
    points = r.stream_points * r.launches
    return r.ops / seconds / 1e9, 8 * stencils * points / seconds / 1e9


def link_rows(corpus: Path, device: str, stencils: int) -> list[tuple[str, ...]]:
    """A chain of ``stencils`` on 2 devices at growing W: where the link, not the pipeline, sets the rate
    (§VIII-C: the distributed designs could not be vectorized further)."""
    out = []
    for w in (1, 4, 8, 16):
        r = sm.estimate(_jacobi(corpus), device, "stencilflow", iterate=stencils // 8, vector=w, devices=2)
        assert r.partition is not None
        rate = min(c.rate for c in r.partition.network_channels)
        gops, paper_ops = _gops(r, stencils)
        out.append(
            (str(w), "2", f"{rate:.3g}", f"{r.predicted_cycles:,}", f"{gops:,.0f}", f"{paper_ops:,.0f}")
        )
    return out


def _paper(n: int, k: int) -> str:
    """The paper's figure for n stencils, on the devices it used for that chain."""
    used = 1 if n <= 112 else n // 112
    return (
        f"{PAPER_FIG14[n]:,} ({used} FPGA{'s' if used > 1 else ''})" if n in PAPER_FIG14 and used == k else ""
    )


def sim_rows(corpus: Path, device: str, lengths: tuple[int, ...]) -> list[tuple[str, ...]]:
    dev = load_device(device)
    out = []
    for n in lengths:
        program = with_iterate(bind_shape(load_program(corpus / JACOBI), {}, (16, 16, 16)), n // 8)
        values = make_inputs(program, {}, 0)
        rate = memory_rate(dev, program)
        for k in (1, 2, 4):
            split = partition(program, BuildConfig(), dev, devices=k)
            result = simulate(program, split.design, values, SimConfig(bytes_per_cycle_per_bank=rate))
            assert result.status == "done"
            predicted = predicted_cycles(split.design, program, rate)
            error = 100 * (predicted - result.cycles) / result.cycles
            out.append((str(n), str(k), str(split.partition.streams_cut), f"{result.cycles:,}",
                        f"{predicted:,}", f"{error:+.2f}%"))  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--device", default="stratix10")
    parser.add_argument("--markdown", action="store_true", help="Markdown tables (the README's)")
    parser.add_argument("--sim", action="store_true", help="also simulate short chains on a 16³ grid")
    args = parser.parse_args()
    print_table(COLUMNS, model_rows(args.corpus, args.device, (112, 224, 448, 896)), args.markdown)
    print()
    print_table(LINK_COLUMNS, link_rows(args.corpus, args.device, 32), args.markdown)
    if args.sim:
        print()
        print_table(SIM_COLUMNS, sim_rows(args.corpus, args.device, (8, 16, 32)), args.markdown)


if __name__ == "__main__":
    main()
