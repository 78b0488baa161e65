"""How close the models are: every published number a model can predict, measured against predicted.

Usage: .venv/bin/python benchmarks/fidelity.py [--markdown | --json] [--paper NAME ...] [--corpus DIR]

The rows are ``benchmarks/published/rows.csv``: one published number a line, with the paper, its table or
figure (``source``), the quantity, the program (``examples/...``, ``corpus:...``, the compatibility
corpus beside the repository, or ``benchmarks/published/<paper>/...``, a paper's own form of a
benchmark), grid, device, configuration, the value as printed, its unit and rounding, ``kind``
(``measured`` on hardware or a simulator, or ``model``: a number the paper's own model computed) and
``notes`` (why a row is more than 25% off). A row is ``fitted`` when a device file's ``sources`` says
``fitted: <row id>`` — its constants were chosen to match it; every other row is predicted.

Predictions come from ``import stencilmap as sm`` (``sm.load``, ``sm.estimate``, ``sm.explore``) and the
model's roofline, one small adapter per paper (``soda``, ``stencilflow``, ``opencl``, ``cgra``, ``emax``)
so that a change of the API touches one function each. ``--json`` prints ``{"rows": [{"paper", "item",
"measured", "predicted", "error", "fitted", ...}], "summary": {...}}`` with ``error`` = predicted /
measured − 1 (null where nothing was predicted). No model constant is changed here.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "benchmarks" / "published" / "rows.csv"
DEVICES = ROOT / "src" / "stencilmap" / "device" / "files"
CORPUS = ROOT.parent / "shared" / "corpus"
COLUMNS = ("id", "paper", "source", "quantity", "program", "grid", "device", "config", "measured", "unit",
           "rounding", "kind", "notes")  # fmt: skip
PAPERS = ("soda", "stencilflow", "opencl", "cgra", "emax")
ITERATIONS = 15_360  # OpenCL §5: every run is 15,360 iterations

Row = dict[str, str]


# ------------------------------------------------------------------------------------------- the data


def load_rows(path: Path = ROWS) -> list[Row]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise SystemExit(f"{path}: header must be {','.join(COLUMNS)}")
        return [dict(r) for r in reader]


def fitted_rows(devices: Path = DEVICES) -> dict[str, str]:
    """Row id → the device whose ``sources`` says ``fitted: <id>``."""
    out: dict[str, str] = {}
    for path in sorted(devices.glob("*.json")):
        for line in json.loads(path.read_text(encoding="utf-8")).get("sources", []):
            if line.startswith("fitted: "):
                out[line.removeprefix("fitted: ").split()[0]] = path.stem
    return out


def config(row: Row) -> dict[str, str]:
    """``k=8 q=10 tile=16392`` → {"k": "8", ...}; words without ``=`` are ignored."""
    return dict(w.split("=", 1) for w in row["config"].split() if "=" in w)


def grid(row: Row) -> tuple[int, ...]:
    return tuple(int(n) for n in row["grid"].split("x"))


def program_path(row: Row, corpus: Path) -> Path:
    name = row["program"]
    return corpus / name.removeprefix("corpus:") if name.startswith("corpus:") else ROOT / name


def kernel_seconds(r: Any) -> float:
    """The kernel's time: every launch's computation, without host transfers (what the papers time)."""
    return float(r.launches * r.compute_seconds)


def baseline(program: Any, device: str, code: str, steps: int = 1) -> Any:
    """One time step of a paper's CPU or GPU code (``model.baseline``: compute, memory and blocking cache;
    ``CODES[code]`` says what the paper says of its code)."""
    from stencilmap.device.catalog import load_device
    from stencilmap.model.baseline import CODES, baseline_step

    shape = tuple(int(n or 0) for n in program.shape)
    return baseline_step(program, shape, load_device(device), CODES[code], steps)


def baseline_gops(program: Any, device: str, code: str) -> float:
    """GOp/s of one step of a baseline code: the workload's operations over the step's time."""
    from stencilmap.model.workload import workload

    step = baseline(program, device, code)
    return workload(program, tuple(int(n or 0) for n in program.shape)).ops() / step.seconds / 1e9


# ------------------------------------------------------------------------------------------ adapters
# One function per paper: (rows of that paper, corpus) → {row id: predicted value or None}.


def predict_soda(rows: list[Row], corpus: Path) -> dict[str, float | None]:
    """SODA §5 on the ku060: Table 3 throughput (pixels × iterations per ns of kernel time) and GOp/s of
    Table 1's configuration; the CPU rows as the Halide baseline on the two E5-2620 v3 (``model.baseline``);
    Table 1's optimum as ``explore`` picks it (``best``: a grid far wider than a tile, the board's 512-bit
    interface). Table 3's grid: two tiles per inner axis (tile sizes of Table 1), about 2²⁵ points."""
    import stencilmap as sm

    @cache
    def shaped(path: Path, tile: tuple[int, ...], q: int) -> tuple[Any, tuple[int, ...]]:
        prog = sm.load(path)
        window = 5 if prog.name.startswith("denoise") else 3  # S of one iteration (Table 1, §4.4)
        inner = tuple(2 * t - q * (window - 1) for t in tile)
        size = 1
        for n in inner:
            size *= n
        shape = (max(64, 2**25 // size), *inner)
        return sm.load(path, shape=shape), shape

    @cache
    def soda(path: Path, k: int, q: int, tile: tuple[int, ...]) -> Any:
        prog, _ = shaped(path, tile, q)
        return sm.estimate(prog, "ku060", "soda", unroll=k, iterate=q, tile=tile, iterations=q)

    @cache
    def best(path: Path) -> Any:
        # 360 time steps: a multiple of every Table 1 q, so that no q is favoured by the step count
        prog = soda_table1_program(path)
        return sm.explore(prog, "ku060", archs=("soda",), iterations=360, top=1, simulate=False).best

    out: dict[str, float | None] = {}
    # Table 1's configuration of each program: its throughput row's (from the whole CSV, so that one row
    # alone, as ``predict`` retries them, still finds it)
    everything = load_rows() + rows
    table1 = {
        r["program"]: config(r)
        for r in everything
        if r["quantity"] == "throughput" and r["device"] == "ku060"
    }
    for row in rows:
        path = program_path(row, corpus)
        c = table1[row["program"]]
        k, q, tile = int(c["k"]), int(c["q"]), tuple(int(t) for t in c["tile"].split("x"))
        prog, shape = shaped(path, tile, q)
        points = 1
        for n in shape:
            points *= n
        qty = row["quantity"]
        if row["device"] != "ku060":  # Halide on the CPU (§5.3): points × q over q steps' time
            out[row["id"]] = points / baseline(prog, row["device"], "halide", q).seconds / 1e9
        elif qty == "throughput":
            out[row["id"]] = points * q / kernel_seconds(soda(path, k, q, tile)) / 1e9
        elif qty == "gops":
            r = soda(path, k, q, tile)
            out[row["id"]] = r.ops / kernel_seconds(r) / 1e9
        else:
            b = best(path)
            assert b.tile is not None  # the grid is wider than any tile that fits
            value = {"opt-unroll": b.lanes, "opt-iterate": b.iterate, "opt-tile0": b.tile[0]}
            out[row["id"]] = float(value[qty])
    return out


def soda_table1_program(path: Path) -> Any:
    """The program SODA's Table 1 DSE explores. An input "sufficiently large" that "the tile size is only
    limited by the on-chip storage size" (§4.2): a grid far wider than any tile that fits (2²⁴ points a row,
    2¹⁶ × 2¹⁶ a plane) and tall (2¹⁶ rows or planes: the fill of q stages is negligible, as in §5.2's
    regression of time on pixels), not one sized from Table 1's answer. The interface is the board's, "512
    bits wide" (§4.5); the corpus programs say ``burst width: 64`` or ``128`` (sodac's test settings), which
    would cap k at 2–4."""
    import stencilmap as sm

    prog = sm.load(path)
    shape = (2**16, *(2 ** (24 // (prog.rank - 1)),) * (prog.rank - 1))
    return replace(sm.load(path, shape=shape), hints=replace(prog.hints, burst_width=512))


@cache
def _jacobi(path: Path, stencils: int, w: int, devices: int) -> Any:
    import stencilmap as sm

    prog = sm.load(path, shape=(2**15, 32, 32))
    return sm.estimate(prog, "stratix10", "stencilflow", iterate=stencils // 8, vector=w,
                       devices=devices if devices > 1 else None)  # fmt: skip


@cache
def _hdiff(path: Path, device: str, w: int | None, shape: tuple[int, ...]) -> Any:
    import stencilmap as sm

    prog = sm.load(path, shape=shape)
    if device == "stratix10":
        return sm.estimate(prog, device, "stencilflow", vector=w)
    return sm.estimate(prog, device, "roofline")


def _hdiff_baseline(row: Row, path: Path, code: str) -> float | None:
    """Table II's CPU and GPU columns: Dawn's five-kernel code as ``model.baseline`` predicts it; %Roof
    against intensity × the data-sheet bandwidth (Eq. 2, as the paper's)."""
    import stencilmap as sm
    from stencilmap.device.catalog import load_device
    from stencilmap.model.roofline import roofline_of

    prog = sm.load(path, shape=grid(row))
    seconds = baseline(prog, row["device"], code).seconds
    gops = baseline_gops(prog, row["device"], code)
    qty = row["quantity"]
    if qty == "kernel-us":
        return seconds * 1e6
    if qty == "kernel-gops":
        return gops
    if qty == "percent-roof":
        roof = roofline_of(prog, grid(row), load_device(row["device"]), 1)
        return 100 * gops / roof.attainable_peak_bandwidth_gops
    return None


def predict_stencilflow(rows: list[Row], corpus: Path) -> dict[str, float | None]:
    """StencilFlow §VIII–IX on the 520N (stratix10): Jacobi 3-D chains (Fig. 14, 15, Table I; GOp/s at the
    paper's 8 Op a stencil where it says so: ``gops8``), horizontal diffusion (Table II; kernel time
    without host transfers, as the paper's; the CPU and GPU columns by ``model.baseline``), the achievable-bandwidth plateau of Fig. 16."""
    import stencilmap as sm
    from stencilmap.device.catalog import load_device
    from stencilmap.model.roofline import roofline_of

    def kernel_share(r: Any, res: str) -> float:
        """A resource without the shell (the device's auxiliary part): Table I's count."""
        used = dict(r.resources.used.amounts)[res]
        aux = dict(dict(r.resources.categories)["auxiliary"].amounts).get(res, 0.0)
        return float(used - aux)

    def kernel_percent(r: Any, res: str) -> float:
        aux = dict(dict(r.resources.categories)["auxiliary"].amounts).get(res, 0.0)
        return 100 * kernel_share(r, res) / (dict(r.resources.available)[res] - aux)

    out: dict[str, float | None] = {}
    s10 = load_device("stratix10")
    for row in rows:
        c, qty, path = config(row), row["quantity"], program_path(row, corpus)
        if qty == "bandwidth":  # operands × 4 B at the clock, capped at the access points' plateau (§VIII-D)
            requested = int(c["operands"]) * 4 * s10.clock_mhz / 1e3
            out[row["id"]] = min(requested, s10.access_point_plateau_gbs(32 * int(c["W"])))
            continue
        if "stencils" in c:
            r = _jacobi(path, int(c["stencils"]), int(c["W"]), int(c["devices"]))
            ops = r.ops * (8 / 6 if qty == "gops8" else 1)  # the paper counts 8 Op a stencil, we count 6
            if qty in ("gops8", "gops"):
                out[row["id"]] = ops / kernel_seconds(r) / 1e9
            else:
                out[row["id"]] = kernel_share(r, qty.removeprefix("kernel-"))
            continue
        w = int(c["W"].split()[0]) if "W" in c else None
        if "code" in c:  # Dawn's code on a CPU or GPU (§IX-B): the baseline model
            out[row["id"]] = _hdiff_baseline(row, path, c["code"])
            continue
        r = _hdiff(path, row["device"], w, grid(row))
        if qty == "kernel-us":
            out[row["id"]] = kernel_seconds(r) * 1e6
        elif qty == "kernel-gops":
            out[row["id"]] = r.ops / kernel_seconds(r) / 1e9
        elif qty == "compute-us":  # "infinite" bandwidth: the compute-bound cycles
            out[row["id"]] = r.launches * r.cycles_per_launch / (r.clock_mhz * 1e6) * 1e6
        elif qty == "compute-gops":
            out[row["id"]] = r.ops / (r.launches * r.cycles_per_launch / (r.clock_mhz * 1e6)) / 1e9
        elif qty == "required-bw":
            out[row["id"]] = r.required_bandwidth_gbs
        elif qty == "latency-share":  # L of eq. 1 against the cycles of the launch
            out[row["id"]] = 100 * r.latency_cycles / r.cycles_per_launch
        elif qty.startswith("kernel-pct-"):
            out[row["id"]] = kernel_percent(r, qty.removeprefix("kernel-pct-"))
        elif qty == "percent-roof":  # Table II's %Roof: against intensity × the data-sheet bandwidth
            prog = sm.load(path, shape=grid(row))
            dev = load_device(row["device"])
            roof = roofline_of(prog, tuple(int(n or 0) for n in prog.shape), dev, 1)
            out[row["id"]] = 100 * (r.ops / kernel_seconds(r) / 1e9) / roof.attainable_peak_bandwidth_gops
        elif qty in ("attainable", "attainable-peak"):
            prog = sm.load(path, shape=grid(row))
            roof = roofline_of(prog, tuple(int(n or 0) for n in prog.shape), s10, 1)
            out[row["id"]] = (
                roof.attainable_gops if qty == "attainable" else roof.attainable_peak_bandwidth_gops
            )
        else:
            out[row["id"]] = None
    return out


def predict_opencl(rows: list[Row], corpus: Path) -> dict[str, float | None]:
    """OpenCL §5 on the Stratix V boards: Table 2 (Laplace on DE5: time at the clock model's frequency,
    the paper's 270 MHz estimate, resource %), Table 4 (the (P_cell, d) §4.3's search picks: ``explore`` at the
    board's lower clock ranked by eq. 1, ``explore.opencl``; the clock of the paper's design), Table 5 (the
    paper's designs; the CPU and GTX960 codes with temporal blocking, ``model.baseline``), Tables 6–7 (3-D
    Jacobi: that optimum). Programs without ``dram`` pins (the paper's kernels interleave global memory)."""
    import stencilmap as sm

    @cache
    def program(path: Path, shape: tuple[int, ...]) -> Any:
        prog = sm.load(path, shape=shape)
        inputs = tuple(replace(i, banks=()) for i in prog.inputs)
        return replace(prog, inputs=inputs, stencils=tuple(replace(s, banks=()) for s in prog.stencils))

    @cache
    def pcm(path: Path, shape: tuple[int, ...], device: str, p: int, d: int, clock: float | None) -> Any:
        return sm.estimate(program(path, shape), device, "pcm", unroll=p, iterate=d, iterations=ITERATIONS,
                           clock_mhz=clock)  # fmt: skip

    @cache
    def best(path: Path, shape: tuple[int, ...], device: str) -> Any:
        """The optimum as §4.3 picks it: eq. 1 at the board's lower clock (``explore.opencl``)."""
        from stencilmap.explore.opencl import opencl_optimum

        return opencl_optimum(program(path, shape), device, ITERATIONS)

    out: dict[str, float | None] = {}
    for row in rows:
        c, qty, path, shape, dev = (
            config(row),
            row["quantity"],
            program_path(row, corpus),
            grid(row),
            row["device"],
        )
        if "code" in c:  # §5.3's CPU and GPU codes: ITERATIONS steps of the baseline (model.baseline)
            out[row["id"]] = ITERATIONS * baseline(program(path, shape), dev, c["code"], ITERATIONS).seconds
            continue
        if qty.startswith("opt-"):
            b = best(path, shape, dev)
            if qty == "opt-pcell":
                out[row["id"]] = float(b.lanes)
            elif qty == "opt-d":
                out[row["id"]] = float(b.iterate)
            elif qty == "opt-clock":  # the chosen design at the device's clock model
                out[row["id"]] = float(pcm(path, shape, dev, b.lanes, b.iterate, None).clock_mhz)
            else:  # opt-gops, opt-epr (Eq. 12: performance over the device's peak)
                r = pcm(path, shape, dev, b.lanes, b.iterate, None)
                out[row["id"]] = r.gops if qty == "opt-gops" else 100 * r.gops / r.device.peak("float32")
            continue
        p, d = int(c["P"]), int(c["d"])
        r = pcm(path, shape, dev, p, d, 270.0 if qty == "time-270" else None)
        if qty in ("time", "time-270"):
            out[row["id"]] = r.predicted_seconds
        elif qty == "clock":
            out[row["id"]] = r.clock_mhz
        else:
            out[row["id"]] = 100 * r.resources.utilization(qty.removeprefix("pct-"))
    return out


def predict_cgra(rows: list[Row], corpus: Path) -> dict[str, float | None]:
    """CGRA §VI–VIII: the roofline's intensity, attainable GFLOPS and worker choice on the TIA CGRA;
    Table I's % of peak (the worker mapping's predicted GFLOPS over the roofline's), the V100 as §VII's
    CUDA code (``model.baseline``) against its roofline at the 850 GB/s copy bandwidth, 16 CGRA tiles against one V100."""
    import stencilmap as sm
    from stencilmap.device.catalog import load_device
    from stencilmap.model.roofline import roofline_of

    @cache
    def roof(path: Path, device: str) -> Any:
        prog = sm.load(path)
        return roofline_of(prog, tuple(int(n or 0) for n in prog.shape), load_device(device), 1)

    @cache
    def est(path: Path, device: str, arch: str) -> Any:
        return sm.estimate(sm.load(path), device, arch)

    @cache
    def v100(path: Path) -> float:
        """GOp/s of §VII's CUDA code on the V100 (``model.baseline``, code ``cuda-smem``)."""
        return baseline_gops(sm.load(path), "v100", "cuda-smem")

    out: dict[str, float | None] = {}
    for row in rows:
        qty, path = row["quantity"], program_path(row, corpus)
        rf = roof(path, "cgra-tia")
        if qty == "intensity":
            out[row["id"]] = rf.operational_intensity
        elif qty == "attainable":
            out[row["id"]] = rf.attainable_gops
        elif qty == "workers":
            out[row["id"]] = float(rf.workers.workers) if rf.workers else None
        elif qty == "worker-gops":
            out[row["id"]] = rf.workers.gops if rf.workers else None
        elif qty == "percent-peak" and row["device"] == "cgra-tia":
            out[row["id"]] = 100 * est(path, "cgra-tia", "cgra").gops / rf.attainable_gops
        elif qty == "percent-peak":
            out[row["id"]] = 100 * v100(path) / roof(path, "v100").attainable_gops
        elif qty == "speedup-16":
            out[row["id"]] = 16 * est(path, "cgra-tia", "cgra").gops / v100(path)
        elif qty == "v100-gops":
            out[row["id"]] = v100(path)
        elif qty == "attainable-850":
            out[row["id"]] = roof(path, "v100").attainable_gops
        else:
            out[row["id"]] = None
    return out


def _emax_cpu_seconds(row: Row, path: Path) -> float:
    """One sweep of the §5.3 comparison's CPU code (Table 2's gcc, ``model.baseline``) on the 320³ grid."""
    import stencilmap as sm

    return float(baseline(sm.load(path, shape=grid(row)), row["device"], config(row)["code"]).seconds)


def predict_emax(rows: list[Row], corpus: Path) -> dict[str, float | None]:
    """EMAX §4.5–5.2 on the 320³ grid: the time saved by packing p Z planes (the best p against p = 1,
    the five-state timeline), the LMM transfer volume's ratio (§4.5's: with unbounded rows, p → ∞), the rows
    a mapping takes; §6's time against Table 2's CPU (the CPU by ``model.baseline``)."""
    import stencilmap as sm
    from stencilmap.model.emax import unbounded_ratio

    @cache
    def est(path: Path, p: int | None) -> Any:
        return sm.estimate(sm.load(path, shape=(320, 320, 320)), "emax", "emax", unroll=p)

    out: dict[str, float | None] = {}
    for row in rows:
        qty, path = row["quantity"], program_path(row, corpus)
        if qty == "reduction":
            out[row["id"]] = 100 * (1 - est(path, None).predicted_seconds / est(path, 1).predicted_seconds)
        elif qty == "transfer-ratio":  # §4.5 assumes unbounded rows: the limit of (5) as p grows
            out[row["id"]] = unbounded_ratio(int(dict(est(path, 1).parameters)["degree"]))
        elif qty == "rows":
            out[row["id"]] = float(dict(est(path, int(config(row)["p"])).parameters)["rows"])
        elif qty == "cpu-ratio":  # §6: EMAX's time over the CPU's (model.baseline)
            out[row["id"]] = est(path, None).predicted_seconds / _emax_cpu_seconds(row, path)
        else:
            out[row["id"]] = None
    return out


ADAPTERS: dict[str, Callable[[list[Row], Path], dict[str, float | None]]] = {
    "soda": predict_soda,
    "stencilflow": predict_stencilflow,
    "opencl": predict_opencl,
    "cgra": predict_cgra,
    "emax": predict_emax,
}


# ------------------------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Result:
    row: Row
    predicted: float | None
    fitted: bool
    why: str = ""  # a prediction that failed: the error's message

    @property
    def measured(self) -> float:
        return float(self.row["measured"])

    @property
    def error(self) -> float | None:
        if self.predicted is None or self.measured == 0:
            return None
        return self.predicted / self.measured - 1

    def to_json(self) -> dict[str, object]:
        r = self.row
        return {"paper": r["paper"], "item": r["id"], "measured": self.measured, "predicted": self.predicted,
                "error": self.error, "fitted": self.fitted, "source": r["source"], "quantity": r["quantity"],
                "unit": r["unit"], "kind": r["kind"], "notes": r["notes"] or self.why}  # fmt: skip


def predict(rows: list[Row], corpus: Path) -> list[Result]:
    fitted = fitted_rows()
    out = []
    for paper in PAPERS:
        mine = [r for r in rows if r["paper"] == paper]
        if not mine:
            continue
        try:
            values = ADAPTERS[paper](mine, corpus)
            out += [Result(r, values.get(r["id"]), r["id"] in fitted) for r in mine]
        except Exception:
            for r in mine:
                try:
                    out.append(Result(r, ADAPTERS[paper]([r], corpus).get(r["id"]), r["id"] in fitted))
                except Exception as exc:
                    why = f"not predicted: {type(exc).__name__}: {exc}".splitlines()[0]
                    out.append(Result(r, None, r["id"] in fitted, why))
    return out


def median_abs(results: list[Result]) -> float | None:
    errors = [abs(e) for r in results if (e := r.error) is not None]
    return statistics.median(errors) if errors else None


def summary(results: list[Result]) -> dict[str, object]:
    """Counts and medians of |error| over all rows, and the same per paper (``papers``)."""
    out = counts(results)
    out["papers"] = {p: counts([r for r in results if r.row["paper"] == p]) for p in PAPERS
                     if any(r.row["paper"] == p for r in results)}  # fmt: skip
    return out


def counts(results: list[Result]) -> dict[str, object]:
    fitted = [r for r in results if r.fitted]
    held = [r for r in results if not r.fitted]
    return {
        "rows": len(results),
        "fitted": len(fitted),
        "held_out": len(held),
        "predicted": sum(r.predicted is not None for r in results),
        "median_abs_error_fitted": median_abs(fitted),
        "median_abs_error_held_out": median_abs(held),
        "median_abs_error_held_out_measured": median_abs([r for r in held if r.row["kind"] == "measured"]),
        "over_25_percent": sum(1 for r in results if r.error is not None and abs(r.error) > 0.25),
    }


def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    out_format = parser.add_mutually_exclusive_group()
    out_format.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    out_format.add_argument("--json", action="store_true", help='{"rows": [...], "summary": {...}}')
    parser.add_argument(
        "--paper", action="append", choices=PAPERS, help="only this paper's rows (repeatable)"
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the compatibility corpus (corpus: rows)")
    parser.add_argument("--rows", type=Path, default=ROWS, help="the published rows (CSV)")
    args = parser.parse_args(argv)
    rows = [r for r in load_rows(args.rows) if not args.paper or r["paper"] in args.paper]
    results = predict(rows, args.corpus)
    if args.json:
        print(json.dumps({"rows": [r.to_json() for r in results], "summary": summary(results)}, indent=1))
        return 0
    from table import print_table

    columns = ("paper", "item", "source", "kind", "measured", "predicted", "error", "fitted", "notes")
    lines = [
        (r.row["paper"], r.row["id"], r.row["source"], r.row["kind"], f"{fmt(r.measured)} {r.row['unit']}",
         fmt(r.predicted),
         "-" if r.error is None else f"{100 * r.error:+.1f}%", "yes" if r.fitted else "",
         (r.row["notes"] or r.why).replace("|", "/"))
        for r in results
    ]  # fmt: skip
    print_table(columns, lines, args.markdown)
    s = summary(results)
    print()
    papers: dict[str, dict[str, object]] = s["papers"]  # type: ignore[assignment]
    per_paper = [(p, *summary_cells(c)) for p, c in papers.items()] + [("all", *summary_cells(s))]
    print_table(("paper", "rows", "fitted", "held out", "predicted", "median abs error fitted",
                 "median abs error held out", "held out, measured only", "over 25%"), per_paper, args.markdown)  # fmt: skip
    print()
    print(f"{s['rows']} rows: {s['fitted']} fitted, {s['held_out']} held out; median |error| fitted "
          f"{percent(s['median_abs_error_fitted'])}, held out {percent(s['median_abs_error_held_out'])}")  # fmt: skip
    return 0


def percent(x: object) -> str:
    return "-" if x is None else f"{100 * float(x):.1f}%"  # type: ignore[arg-type]


def summary_cells(c: dict[str, object]) -> tuple[str, ...]:
    return (str(c["rows"]), str(c["fitted"]), str(c["held_out"]), str(c["predicted"]),
            percent(c["median_abs_error_fitted"]), percent(c["median_abs_error_held_out"]),
            percent(c["median_abs_error_held_out_measured"]), str(c["over_25_percent"]))  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
