"""What ``compile`` writes beside the code: the design (JSON, DOT, SVG), the plots, ``report.md``, a
self-contained ``report.html`` (images inlined) and ``summary.json``."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap import native
from stencilmap.codegen.dot import SUMMARY_PAST, summary_dot, to_dot
from stencilmap.design.serialize import design_to_json
from stencilmap.model.plot import save_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from stencilmap.design.ir import Design
    from stencilmap.jobs.compile import CompileReport

#: Characters with a meaning in Markdown (CommonMark, GFM tables) mid-line, escaped with a backslash in text;
#: ``_`` only where it could open or close emphasis (not between letters or digits, as in ``dag_listing1``).
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|~&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
#: Control characters (newlines included), which would end a table row or a line: shown as U+FFFD.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def md_text(value: object) -> str:
    """``value`` as Markdown text that renders as exactly its characters (issue 19 §4): every Markdown
    character backslash-escaped (``|`` too, so a table cell stays one cell), control characters replaced."""
    return _MD_SPECIAL.sub(r"\\\1", _CONTROL.sub("\ufffd", str(value)))


def md_code(value: object, in_table: bool = False) -> str:
    """``value`` as a Markdown code span: fenced by more backticks than it holds in a row, so a backtick in
    it does not close the span; control characters replaced; ``|`` escaped inside a table row."""
    text = _CONTROL.sub("\ufffd", str(value))
    if in_table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_fence(text: str, info: str = "") -> list[str]:
    """The lines of a fenced code block holding ``text`` (its fence longer than any run of backticks in
    it, so nothing in it ends the block; control characters but newlines replaced)."""
    clean = re.sub("[\x00-\x09\x0b-\x1f\x7f-\x9f]", "\ufffd", text)
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", clean)), default=0) + 1)
    return [f"{fence}{info}", *clean.split("\n"), fence]


#: designs with more modules are not laid out as SVG (Graphviz takes minutes on them); the DOT is written
MAX_SVG_MODULES = 1500
#: ... nor a DOT text larger than this; the size, not the wall clock, bounds the work (issue 19 §9, §10)
MAX_SVG_DOT_BYTES = 1 << 20
#: a safety net only: a render that takes longer degrades to a note in the report, never an error
SVG_TIMEOUT_S = 60.0


def write_report(report: CompileReport, folder: Path) -> tuple[str, ...]:
    """Write every file of the report into ``folder``; returns all files there, relative, sorted."""
    notes: list[str] = []
    if report.design is not None:
        text = json.dumps(design_to_json(report.design), indent=1) + "\n"
        (folder / "design.json").write_text(text, encoding="utf-8")
        (folder / "design.dot").write_text(to_dot(report.design), encoding="utf-8")
        notes += _render_svg(folder, report.design)
    save_figure(folder / "roofline.png", lambda: roofline_with_design(report))
    if report.choice.explored is not None:
        from stencilmap.explore.plot import write_space_plot

        write_space_plot(folder / "design_space.png", report.choice.explored)
    markdown = report_markdown(report, folder, notes)
    (folder / "report.md").write_text(markdown, encoding="utf-8")
    (folder / "report.html").write_text(report_html(markdown, folder, report), encoding="utf-8")
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    summary = {**report.to_json(), "files": [*files, "summary.json"]}
    (folder / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return tuple(sorted([*files, "summary.json"]))


def _render_svg(folder: Path, design: Design) -> list[str]:
    """``design.svg``: the design's graph, or past ``SUMMARY_PAST`` modules its summary
    (``design_summary.dot``: stages, chains, PE groups), laid out by Graphviz within bounds."""
    source, notes = "design.dot", []
    if len(design.modules) > SUMMARY_PAST:
        (folder / "design_summary.dot").write_text(summary_dot(design), encoding="utf-8")
        source = "design_summary.dot"
        notes.append(
            f"design.svg draws the summary of {len(design.modules):,} modules (one node per stage, field and "
            f"kind: reuse chains, buffers, PEs); design.dot has every module"
        )
    dot = shutil.which("dot")
    if dot is None:
        return ["design.svg not rendered: Graphviz's `dot` is not installed (`apt-get install graphviz`)"]
    nodes = (folder / source).read_text(encoding="utf-8").count(" [shape=")
    if nodes > MAX_SVG_MODULES:
        return [f"design.svg not rendered: {nodes:,} nodes (at most {MAX_SVG_MODULES:,} are laid out)"]
    size = (folder / source).stat().st_size
    if size > MAX_SVG_DOT_BYTES:
        return [
            f"design.svg not rendered: {source} has {size:,} bytes (at most {MAX_SVG_DOT_BYTES:,} are laid out)"
        ]
    try:
        done = native.run([dot, "-Tsvg", source, "-o", "design.svg"], cwd=folder, timeout=SVG_TIMEOUT_S)
    except OSError as exc:
        return [f"design.svg not rendered: {md_text(str(exc.strerror or exc))}"]
    if done.timed_out:
        (folder / "design.svg").unlink(missing_ok=True)
        return [f"design.svg not rendered: Graphviz ran past {SVG_TIMEOUT_S:.0f} s"]
    if done.returncode != 0:
        (folder / "design.svg").unlink(missing_ok=True)
        return [f"design.svg not rendered: dot failed ({md_text(done.stderr.strip().splitlines()[-1:])})"]
    return notes


def roofline_with_design(report: CompileReport) -> Figure:
    """The device's roofline for the program at the chosen design's steps on chip, with the design's
    predicted performance marked."""
    from stencilmap.model.plot import roofline_figure
    from stencilmap.model.roofline import roofline_of

    choice = report.choice
    roof = roofline_of(choice.program, choice.shape, report.device, choice.q)
    figure = roofline_figure(roof)
    ax = figure.axes[0]
    if choice.estimate is not None:
        gops = choice.estimate.gops
        ax.plot(
            [roof.operational_intensity],
            [gops],
            "*",
            color="C3",
            ms=12,
            label=f"chosen: {choice.arch} {_params(choice)} → {gops:.4g} GOp/s predicted",
        )
        low, high = ax.get_ylim()
        if gops > 0:  # the chosen design may sit far below the roof (a log axis: nothing at or below 0)
            ax.set_ylim(min(low, gops / 2), high)
        # below the axes: inside them the legend can cover the chosen point (issue 25)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize="small", frameon=False)
        figure.subplots_adjust(bottom=0.3)
    return figure


def _params(choice: object) -> str:
    from stencilmap.jobs.compile_flows import Choice

    assert isinstance(choice, Choice)
    return ", ".join(
        f"{k} {','.join(map(str, v)) if isinstance(v, tuple) else v}"
        for k, v in choice.parameters
        if v is not None
    )


def _yes(valid: bool | None) -> str:
    return {True: "**valid**", False: "**INVALID**", None: "not run"}[valid]


def report_markdown(report: CompileReport, folder: Path, notes: list[str]) -> str:
    """The report as Markdown: the choice and why, prediction against simulation, resources, bandwidth,
    verification, and the commands that reproduce each number."""
    c, sim, csim = report.choice, report.simulation, report.csim
    shape = "×".join(map(str, c.shape))
    lines = [
        f"# {md_text(report.program.name)} on {md_text(report.device.name)}",
        "",
        f"`stencilmap compile` of {md_code(report.source)} ({report.program.format}, grid {shape}, "
        f"{c.iterations:,} time step(s)) for **{md_text(report.device.name)}** ({md_text(report.device.kind)}"
        f"{', ' + md_text(report.device.part) if report.device.part else ''}).",
        "",
        "| summary | |",
        "|---|---|",
        f"| design | **{c.arch}** {_params(c)} |",
        f"| predicted time | **{format_seconds(c.predicted_seconds)}** for {c.iterations:,} step(s) |",
        f"| code | {c.target} — {len(report.code)} file(s) in `code/` |",
        f"| code run here | {_yes(csim.valid)}: {md_text(csim.message)} |",
    ]
    if sim is not None:
        err = sim.prediction_error
        lines.append(
            f"| cycle-level simulation | {_yes(sim.valid)}, {sim.cycles:,} cycles against "
            f"{sim.predicted_cycles:,} predicted ({'' if err is None else f'{err:+.2%}'})"
            f"{' on a scaled grid' if sim.scaled else ''} |"
        )
    lines += ["", "## What was chosen, and why", "", f"{md_text(c.why[0].upper() + c.why[1:])}.", ""]
    lines += _candidates(report)
    lines += _prediction(report)
    lines += _resources(report)
    lines += _verification(report)
    lines += _design(report, folder, notes)
    lines += _reproduce(report)
    lines += ["## Files", "", *[f"- {f}" for f in _listing(folder)], ""]
    return "\n".join(lines)


def format_seconds(seconds: float) -> str:
    """Seconds in s, ms or µs, as the report writes them."""
    if seconds >= 1:
        return f"{seconds:,.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} µs"


def _candidates(report: CompileReport) -> list[str]:
    explored = report.choice.explored
    if explored is None:
        return []
    rows = [
        "| # | arch | lanes | iterate | tile | predicted | scenario | binding resource |",
        "|---:|---|---:|---:|---|---:|---|---|",
    ]
    for i, cand in enumerate(explored.top[:8], 1):
        util = dict(cand.utilization).get(cand.binding, 0.0)
        tile = "×".join(map(str, cand.tile)) if cand.tile else "untiled"
        rows.append(
            f"| {i} | {cand.arch} | {cand.lanes} | {cand.iterate} | {tile} | "
            f"{format_seconds(cand.predicted_seconds)} | {cand.scenario} | {md_text(cand.binding)} {util:.0%} |"
        )
    return [
        "The best candidates of the search (predicted for every time step):",
        "",
        *rows,
        "",
        "![design space](design_space.png)",
        "",
    ]


def _prediction(report: CompileReport) -> list[str]:
    est = report.choice.estimate
    if est is None:
        return []
    lines = [
        "## Predicted performance",
        "",
        "| for all time steps | |",
        "|---|---|",
        f"| launches | {est.launches:,} × {est.steps_on_chip} step(s) on chip |",
        f"| cycles | {est.cycles_per_launch:,} per launch compute-bound (latency {est.latency_cycles:,}); "
        f"{est.predicted_cycles:,} for all launches at the device's bandwidth, at {est.clock_mhz:g} MHz |",
        f"| scenario | {est.scenario}-bound: running compute-bound would take "
        f"{est.required_bandwidth_gbs:,.3g} GB/s; the device gives {report.device.practical_bandwidth_gbs:,.3g} "
        f"GB/s practical |",
        f"| time | compute {format_seconds(est.compute_seconds)} per launch, host transfers "
        f"{format_seconds(est.host_seconds)}, control {format_seconds(est.control_seconds)}; total "
        f"**{format_seconds(est.predicted_seconds)}** |",
        f"| performance | {est.gops:.4g} GOp/s, {est.percent_of_roofline:.1f}% of the roofline's "
        f"{est.roofline_gops:.4g} |",
        "",
    ]
    lines += [f"- {md_text(n)}" for n in est.notes]
    return [*lines, "", "![roofline](roofline.png)", ""]


def _resources(report: CompileReport) -> list[str]:
    est = report.choice.estimate
    if est is None or est.resources is None:
        return []
    r = est.resources
    rows = ["## Resources", "", "| resource | used | available | utilization |", "|---|---:|---:|---:|"]
    for name, avail in r.available:
        rows.append(f"| {md_text(name)} | {r.used[name]:,.0f} | {avail:,} | {r.utilization(name):.1%} |")
    return [*rows, ""]


def _verification(report: CompileReport) -> list[str]:
    csim, sim = report.csim, report.simulation
    grid = "×".join(map(str, csim.shape))
    lines = [
        "## Verification",
        "",
        f"**The generated code run here** ({csim.how}) on a {grid} grid"
        f"{' (scaled down; the code for that grid is in `verify/`)' if csim.scaled else ''}: "
        f"{_yes(csim.valid)} — {md_text(csim.message)}"
        f"{f'; compiled in {csim.compile_seconds:.2f} s, ran in {csim.run_seconds:.2f} s' if csim.valid is not None else ''}.",
        "",
    ]
    if sim is not None:
        grid = "×".join(map(str, sim.shape))
        err = sim.prediction_error
        lines += [
            f"**Cycle-level simulation** of the chosen design on a {grid} grid"
            f"{' (scaled down from the program grid: the inner axes that set the structure are kept)' if sim.scaled else ''},"
            f" with the device's memory bandwidth: {sim.status}, {sim.cycles:,} cycles against the model's "
            f"{sim.predicted_cycles:,} ({'n/a' if err is None else f'{err:+.2%}'}); outputs {_yes(sim.valid)} "
            f"({md_text(sim.message)}); simulated in {sim.seconds:.2f} s.",
            "",
        ]
    else:
        lines += ["There is no hardware design to simulate cycle by cycle on this kind of device.", ""]
    return lines


def _design(report: CompileReport, folder: Path, notes: list[str]) -> list[str]:
    d = report.design
    if d is None:
        return []
    kinds = ", ".join(f"{n} {k}" for k, n in d.kinds().items())
    storage = sum(ch.depth * ch.width for ch in d.channels)
    lines = [
        "## The design",
        "",
        f"{md_code(d.name)}: {len(d.modules):,} modules ({kinds}), {len(d.channels):,} "
        f"channels holding {storage:,} elements. `design.json` loads again "
        f"(`design_from_json(json.load(f))` in `stencilmap.design.serialize`); `design.dot` is its graph.",
        "",
    ]
    if (folder / "design.svg").exists():
        lines += ["![design](design.svg)", ""]
    return [*lines, *[f"- {n}" for n in notes], ""]


def _reproduce(report: CompileReport) -> list[str]:
    rows = [(what, cmd) for what, cmd in report.choice.commands]
    rows.append(("the code run here", report.csim.command))
    if report.simulation is not None:
        rows.append(("the cycle-level simulation", report.simulation.command))
    lines = ["## Reproduce each number", ""]
    for what, cmd in rows:
        if cmd:
            lines += [f"{what}:", "", *md_fence(f"$ {cmd}", "console"), ""]
    return lines


def _listing(folder: Path) -> list[str]:
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    shown = [f for f in files if not f.startswith(("code/data/", "verify/"))]
    hidden = len(files) - len(shown)
    more = [f"… and {hidden} more (input data, the scaled-down verified code)"] if hidden else []
    return [md_code(f) for f in (*shown, "report.md", "report.html", "summary.json")] + more


_IMG = re.compile(r'<img src="([^"/]+\.(png|svg))" alt="([^"]*)"')

CSS = """
body { font: 15px/1.5 system-ui, -apple-system, 'Segoe UI', sans-serif; max-width: 980px; margin: 2em auto;
       padding: 0 1.2em; color: #1f2328; }
h1 { border-bottom: 1px solid #d0d7de; padding-bottom: .3em; }
h2 { margin-top: 1.8em; border-bottom: 1px solid #eaeef2; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .8em 0; }
th, td { border: 1px solid #d0d7de; padding: .3em .7em; text-align: left; vertical-align: top; }
td:nth-child(n+2) { font-variant-numeric: tabular-nums; }
code { background: #f6f8fa; padding: .1em .3em; border-radius: 4px; font-size: 90%; }
pre { background: #f6f8fa; padding: .8em; white-space: pre-wrap; word-break: break-all; border-radius: 6px; }
pre code { background: none; padding: 0; }
img { max-width: 100%; height: auto; border: 1px solid #eaeef2; }
"""


def report_html(markdown: str, folder: Path, report: CompileReport) -> str:
    """``markdown`` as one self-contained HTML page: the images inlined as data URIs."""
    from markdown_it import MarkdownIt

    # html=False: any markup that reached the Markdown is shown as text, never passed through (issue 19 §4)
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)

    def inline(m: re.Match[str]) -> str:
        path = folder / m.group(1)
        if not path.exists():
            return m.group(0)
        mime = "image/svg+xml" if m.group(2) == "svg" else "image/png"
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<img src="data:{mime};base64,{data}" alt="{m.group(3)}"'

    body = _IMG.sub(inline, body)
    title = html.escape(f"{report.program.name} on {report.device.name} — stencilmap compile")
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<style>{CSS}</style>\n'
        f"</head>\n<body>\n{body}</body>\n</html>\n"
    )
