"""How ``stencilmap simulate``'s report looks: Rich tables for people (the short report, or every table
with ``--verbose``), one JSON object for ``--json``, one CSV row per module for ``--format csv``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stencilmap.cli.common import dims, echo_csv, partition_table

if TYPE_CHECKING:  # the job is imported when the command runs: `--help` stays instant
    from stencilmap.jobs.simulate import SimulateReport
    from stencilmap.sim import SimResult
    from stencilmap.sim.validate import OutputCheck

#: Modules the short report names as the most stalled (``--verbose`` has every module, ``--json`` too).
TOP_STALLED = 3


def _num(x: float) -> float | str:
    """A JSON number, or "nan" / "inf" / "-inf" (JSON has no non-finite numbers)."""
    return x if math.isfinite(x) else str(x)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _check_json(c: OutputCheck) -> dict[str, Any]:
    m = c.first_mismatch
    return {
        "dtype": c.dtype,
        "points": c.points,
        "tolerance": {"rtol": c.tolerance.rtol, "atol": c.tolerance.atol},
        "bit_exact": c.bit_exact,
        "max_abs_error": _finite(c.max_abs_error),
        "max_rel_error": _finite(c.max_rel_error),
        "mismatches": c.mismatches,
        "first_mismatch": None
        if m is None
        else {"index": list(m.index), "got": _num(m.got), "expected": _num(m.expected)},
    }


def _bandwidth_json(report: SimulateReport) -> dict[str, Any]:
    b = report.bandwidth
    return {
        "unlimited": b.bytes_per_cycle_per_bank is None,
        "banks": list(b.banks),
        "clock_mhz": b.clock_mhz,
        "bytes_per_cycle_per_bank": b.bytes_per_cycle_per_bank,
        "required_bytes_per_cycle": b.required_bytes_per_cycle,
        "achieved_bytes_per_cycle": b.achieved_bytes_per_cycle,
        "available_bytes_per_cycle": b.available_bytes_per_cycle,
        "required_gbs": b.gbs(b.required_bytes_per_cycle),
        "achieved_gbs": b.gbs(b.achieved_bytes_per_cycle),
        "available_gbs": b.gbs(b.available_bytes_per_cycle),
        "slowdown": b.slowdown,
        "ports": [
            {
                "field": p.field,
                "direction": p.direction,
                "bank": p.bank,
                "bytes": round(p.bytes),
                "required_bytes_per_cycle": p.required_bytes_per_cycle,
            }
            for p in b.ports
        ],
    }


def simulate_json(report: SimulateReport) -> dict[str, Any]:
    """The report as one JSON-ready dict (sorted where order is free; deterministic but for the
    ``*seconds``: the whole job, the cycle loop alone, and compilation in this run)."""
    from stencilmap.jobs.simulate import lanes_of

    p, r, v, f = report.program, report.result, report.validation, report.facts
    first = v.first_mismatch
    dl = r.deadlock
    return {
        "program": p.name,
        "file": p.path,
        "format": p.format,
        "fused": [list(pair) for pair in report.fused],
        "arch": report.arch,
        "shape": list(f.shape),
        "iterate": p.iterate,
        "design": {
            "name": report.design.name,
            "parameters": {k: list(x) if isinstance(x, tuple) else x for k, x in report.design.parameters},
            "modules": report.design.kinds(),
            "channels": len(report.design.channels),
        },
        "device": report.device.name if report.device is not None else None,
        "status": r.status,
        "cycles": r.cycles,
        "output_points": r.output_points,
        "cycles_per_output": r.cycles_per_output,
        "predicted": {
            "lanes": lanes_of(report.design),
            "points": f.points,
            "latency_cycles": f.latency_cycles,
            "runtime_cycles": f.runtime_cycles,
            "bandwidth_slowdown": report.bandwidth.slowdown,
            "cycles": report.predicted_cycles,
        },
        **({} if report.partition is None else {"partition": report.partition.to_json()}),
        "valid": v.valid,
        "bit_exact": v.bit_exact,
        "max_abs_error": _finite(v.max_abs_error),
        "first_mismatch": None
        if first is None
        else {
            "output": first[0],
            "index": list(first[1].index),
            "got": _num(first[1].got),
            "expected": _num(first[1].expected),
        },
        "validation": {c.name: _check_json(c) for c in v.outputs},
        "offchip_bytes_read": {k: round(x) for k, x in sorted(r.bytes_read.items())},
        "offchip_bytes_written": {k: round(x) for k, x in sorted(r.bytes_written.items())},
        "bandwidth": _bandwidth_json(report),
        "stalls": {
            m.name: {"kind": m.kind, "busy": m.busy, "starved": m.starved, "blocked": m.blocked}
            for m in r.modules
        },
        "channel_peaks": {c: {"peak": pk, "depth": d} for c, (pk, d) in r.channel_peaks.items()},
        "deadlock": None
        if dl is None
        else {
            "cycle": dl.cycle,
            "waiting": [
                {"module": w.module, "reason": w.reason, "channel": w.channel, "on": w.on} for w in dl.waiting
            ],
            "cycle_of_waits": list(dl.cycle_of_waits),
        },
        "firings": r.firings,
        "outputs": {k: str(x) for k, x in report.outputs.items()},
        "trace": str(report.trace) if report.trace is not None else None,
        "seconds": round(report.seconds, 6),
        "sim_seconds": round(r.sim_seconds, 6),
        "compile_seconds": round(r.compile_seconds, 6),
        "warnings": list(p.warnings),
        **({"emax": report.emax.to_json()} if report.emax is not None else {}),
        **({"cgra": report.cgra.to_json()} if report.cgra is not None else {}),
    }


# --------------------------------------------------------------------------------------------- text


def _per_second(r: SimResult) -> str:
    return f"{r.cycles / r.sim_seconds:,.0f} cycles/s" if r.sim_seconds > 0 else "—"


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n:.0f} B"


def _rate(report: SimulateReport, bytes_per_cycle: float | None) -> str:
    if bytes_per_cycle is None:
        return "unlimited"
    gbs = report.bandwidth.gbs(bytes_per_cycle)
    return f"{bytes_per_cycle:.4g} B/cycle" + (f" ({gbs:.4g} GB/s)" if gbs is not None else "")


def _verdict(report: SimulateReport) -> str:
    v, r = report.validation, report.result
    points = sum(c.points for c in v.outputs)
    if v.valid:
        how = "bit-exact" if v.bit_exact else f"within tolerance (max abs error {v.max_abs_error:.3g})"
        return f"[green]valid[/green]: {how} on {points:,} defined points"
    if r.status != "done":  # its outputs are incomplete: a first mismatch would say nothing
        return f"[red]INVALID[/red]: the simulation did not finish ({r.status})"
    bad = sum(c.mismatches for c in v.outputs)
    why = f"{bad:,} of {points:,} defined points beyond tolerance"
    first = v.first_mismatch
    if first is not None:
        name, m = first
        check = next(c for c in v.outputs if c.name == name)
        index = ", ".join(map(str, m.index))
        why += f"; first: {name}[{index}] = {m.got!r}, expected {m.expected!r} ({check.tolerance.describe()})"
        if check.dtype in ("int64", "uint64"):  # docs/guide/simulation.md, "Limits"
            why += "; 64-bit integers are exact up to 2⁵³ in the simulator (its values travel as float64)"
    return f"[red]INVALID[/red]: {why}"


def _cycles_line(report: SimulateReport) -> str:
    """Simulated cycles against the model's (``model.timing``, as ``estimate``), or EMAX's closed form, or
    the CGRA model's with the GFLOPS against the roofline."""
    r = report.result
    if report.cgra is not None:
        c = report.cgra
        return (
            f"cycles [bold]{r.cycles:,}[/bold]; CGRA model {c.prediction.cycles:,} ({c.prediction.bound}-bound); "
            f"{c.run.gflops:.4g} GFLOPS = {c.run.percent_of_roofline:.3g}% of the {c.run.roofline_gops:.4g} GFLOPS roofline"
        )
    if report.emax is not None:
        e = report.emax
        return (
            f"cycles [bold]{r.cycles:,}[/bold]; EMAX model (§5.1 closed form) {e.model.seconds:.4g} s, "
            f"simulated {e.run.schedule.total_s:.4g} s"
        )
    line = f"cycles [bold]{r.cycles:,}[/bold], predicted {report.predicted_cycles:,}"
    if r.status == "done" and report.predicted_cycles > 0:
        line += f" ({100 * (r.cycles - report.predicted_cycles) / report.predicted_cycles:+.2f}%)"
    return line + f"; {r.cycles_per_output:.4g} cycles per output point ({r.output_points:,} points)"


def _summary(report: SimulateReport) -> Table:
    r = report.result
    rows = [
        ("status", r.status),
        ("cycles", f"[bold]{r.cycles:,}[/bold]"),
        ("predicted (as estimate)", f"{report.predicted_cycles:,}"),
        ("cycles per output point", f"{r.cycles_per_output:.4g} ({r.output_points:,} points)"),
        ("validation", _verdict(report)),
        ("module firings / cycle loop", f"{r.firings:,} / {r.sim_seconds:.3f} s ({_per_second(r)})"),
    ]
    if report.cgra is not None:
        c = report.cgra
        rows[2] = ("CGRA model", f"{c.prediction.cycles:,} cycles ({c.prediction.bound}-bound)")
        rows.append(
            (
                "GFLOPS",
                f"{c.run.gflops:.4g} = {c.run.percent_of_roofline:.3g}% of the {c.run.roofline_gops:.4g} roofline",
            )
        )
    table = Table(title="simulation", title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    for what, value in rows:
        table.add_row(what, value)
    return table


def _stalled(report: SimulateReport) -> list[Any]:
    return sorted(report.result.modules, key=lambda m: (-(m.starved + m.blocked), m.name))


def _stall_line(report: SimulateReport) -> str:
    """The few most stalled modules, in one line."""
    mods = _stalled(report)
    top = [m for m in mods[:TOP_STALLED] if m.starved + m.blocked > 0]
    if not top:
        return f"stalls: none in {len(mods)} modules"
    named = ", ".join(f"{escape(m.name)} ({m.starved:,} starved, {m.blocked:,} blocked)" for m in top)
    return f"stalls: most in {named}; {len(mods)} modules (--verbose lists them all)"


def _traffic_line(report: SimulateReport) -> str:
    b = report.bandwidth
    read = sum(p.bytes for p in b.ports if p.direction == "read")
    written = b.total_bytes - read
    return (
        f"off-chip: {_bytes(read)} read, {_bytes(written)} written; achieved "
        f"{_rate(report, b.achieved_bytes_per_cycle)}, required {_rate(report, b.required_bytes_per_cycle)}, "
        f"available {_rate(report, b.available_bytes_per_cycle)}"
        + (f" on {b.banks_label}" if b.bytes_per_cycle_per_bank is not None else "")
    )


def _stall_table(report: SimulateReport) -> Table:
    mods = _stalled(report)
    title = f"stalls ({len(mods)} modules, most starved + blocked cycles first)"
    table = Table(title=title, title_justify="left")
    for col in ("module", "kind", "busy", "starved", "blocked", "busy %"):
        table.add_column(col, justify="left" if col in ("module", "kind") else "right")
    cycles = max(1, report.result.cycles)
    for m in mods:
        table.add_row(
            m.name, m.kind, f"{m.busy:,}", f"{m.starved:,}", f"{m.blocked:,}", f"{100 * m.busy / cycles:.1f}"
        )
    return table


def _channel_table(report: SimulateReport) -> Table:
    peaks = sorted(
        report.result.channel_peaks.items(), key=lambda kv: (-kv[1][0] / max(1, kv[1][1]), -kv[1][0], kv[0])
    )
    table = Table(title=f"channel peaks ({len(peaks)} channels, fullest first)", title_justify="left")
    for col in ("channel", "peak", "depth"):
        table.add_column(col, justify="left" if col == "channel" else "right")
    for name, (peak, depth) in peaks:
        table.add_row(name, str(peak), str(depth))
    return table


def _bandwidth_table(report: SimulateReport) -> Table:
    b = report.bandwidth
    if b.bytes_per_cycle_per_bank is None:
        title = "off-chip traffic (memory unlimited: no --device)"
    else:
        assert report.device is not None
        where = "per bank" if b.interleaved == 1 else f"over all {b.interleaved} banks, interleaved"
        title = f"off-chip traffic ({report.device.name}: {b.bytes_per_cycle_per_bank:.4g} B/cycle {where} at {b.clock_mhz:g} MHz)"
    table = Table(title=title, title_justify="left")
    for col in ("field", "direction", "bank", "bytes", "full rate"):
        table.add_column(col, justify="left" if col in ("field", "direction") else "right")
    for p in b.ports:
        table.add_row(
            p.field, p.direction, str(p.bank), _bytes(p.bytes), _rate(report, p.required_bytes_per_cycle)
        )
    table.add_section()
    table.add_row("achieved", "", "", _bytes(b.total_bytes), _rate(report, b.achieved_bytes_per_cycle))
    table.add_row("required B_req", "", "", "", _rate(report, b.required_bytes_per_cycle))
    table.add_row(f"available ({b.banks_label})", "", "", "", _rate(report, b.available_bytes_per_cycle))
    return table


def _deadlock_lines(report: SimulateReport, verbose: bool) -> list[str]:
    """The deadlock: every waiting module with ``verbose``, else those on the wait-for cycle."""
    dl = report.result.deadlock
    if dl is None:
        return []
    lines = [f"[red bold]deadlock[/red bold] at cycle {dl.cycle:,}: {len(dl.waiting)} module(s) waiting"]
    on_cycle = set(dl.cycle_of_waits)
    shown = [w for w in dl.waiting if verbose or not on_cycle or w.module in on_cycle]
    for w in shown:
        lines.append(escape(f"  {w.module} waits on {w.on} ({w.reason}: {w.channel})"))
    if len(shown) < len(dl.waiting):
        lines.append(f"  ({len(dl.waiting) - len(shown)} more waiting off the cycle: --verbose lists them)")
    if dl.cycle_of_waits:
        lines.append(escape("wait-for cycle: " + " → ".join(dl.cycle_of_waits)))
    return lines


def _design_params(report: SimulateReport) -> str:
    """The design's parameters that say what was built (k, q, W, P_cell, d, delay buffers, tiling)."""
    p = dict(report.design.parameters)
    shown = [
        f"{k}={v}"
        for k, v in report.design.parameters
        if k in ("k", "q", "W", "P_cell", "d", "delay_buffers", "degree", "p", "rows", "x_chunks")
        or k in ("workers", "layers", "strips")
    ]
    tiles = p.get("tiles_total", 1)
    if isinstance(tiles, int) and tiles > 1:
        stream = p.get("stream_shape", ())
        shown.append(f"{tiles} tiles of {dims(stream if isinstance(stream, tuple) else ())}")
    return ", ".join(shown)


def print_simulation(report: SimulateReport, console: Console, verbose: bool = False) -> None:
    """The short report (verdict, cycles against the prediction, the most stalled modules, off-chip
    traffic), or with ``verbose`` every table in full."""
    p = report.program
    params = _design_params(report)
    iterate = f", iterate {p.iterate}" if p.iterate > 1 else ""
    where = (
        f"on {report.device.name} at {report.device.clock_mhz:g} MHz"
        if report.device is not None
        else "memory unlimited (no --device)"
    )
    console.print(
        f"[bold]{escape(p.name)}[/bold] ({p.format}, {dims(report.facts.shape)}{iterate}) as [bold]{report.arch}[/bold]: "
        f"{params}; {where}"
    )
    if verbose:
        console.print(_summary(report))
    else:
        console.print(_verdict(report))
        console.print(_cycles_line(report))
    if report.emax is not None:
        e = report.emax.run
        states = ", ".join(f"{k} {v:.4g} s" for k, v in e.schedule.to_json().items())
        console.print(
            f"EMAX: {e.lmm_streams:,} X-streams DDR3 → LMM in {len(e.executions):,} executions; {states}"
        )
    elif verbose:
        if report.result.modules:
            console.print(_stall_table(report))
        console.print(_channel_table(report))
    else:
        console.print(_stall_line(report))
    console.print(_bandwidth_table(report) if verbose else _traffic_line(report))
    if report.partition is not None:
        console.print(partition_table(report.partition))
    for line in _deadlock_lines(report, verbose):
        console.print(line)
    if report.outputs:
        console.print("outputs written to " + escape(", ".join(str(x) for x in report.outputs.values())))
    else:
        console.print(f"outputs not written: the simulation ended with status {escape(report.result.status)}")
    if report.trace is not None:
        console.print(f"trace written to {escape(str(report.trace))}")


def simulate_csv(report: SimulateReport) -> None:
    """``--format csv``: one row per module, its busy, starved and blocked cycles (every module)."""
    rows = [(m.name, m.kind, m.busy, m.starved, m.blocked) for m in report.result.modules]
    echo_csv(("module", "kind", "busy", "starved", "blocked"), rows)
