"""Writing a simulation trace: per-module activity (and, when recorded, per-channel occupancy) per cycle.

The format follows the file's suffix:

* ``.jsonl`` / ``.ndjson`` — JSON Lines. The first line is a header::

      {"format": "stencilmap-trace", "version": 1, "design": ..., "arch": ..., "cycles": <recorded>,
       "total_cycles": <simulated>, "modules": [...], "channels": [...] | null,
       "activity": ["idle", "busy", "starved", "blocked", "finished"]}

  then one line per recorded cycle: ``{"cycle": c, "modules": {name: activity}}`` listing every module
  that is not idle (``finished`` included), and ``"channels": {name: beats}`` for the non-empty channels
  when occupancy was recorded.
* ``.vcd`` — a Value Change Dump (IEEE 1364 §18) for waveform viewers: one time unit per clock cycle,
  a 3-bit ``activity`` wire per module (0 idle, 1 busy, 2 starved, 3 blocked, 4 finished) and a 32-bit
  ``occupancy`` integer per channel when recorded; values are dumped at cycle 0 and then only when they
  change.

Files are written atomically (temporary file + rename). Names are deterministic: no timestamps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.errors import StencilmapError, param
from stencilmap.io import write_text_atomically

Array = npt.NDArray[Any]

#: Activity codes of ``SimResult.trace`` and their names.
ACTIVITY = ("idle", "busy", "starved", "blocked", "finished")
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".vcd": "vcd"}


@dataclass(frozen=True, slots=True)
class Trace:
    """What a trace file holds: activity ``[cycles, modules]`` and optionally occupancy ``[cycles, channels]``."""

    design: str
    arch: str
    modules: tuple[str, ...]
    activity: Array  # int8 activity codes
    total_cycles: int
    channels: tuple[str, ...] = ()
    occupancy: Array | None = None  # beats held at the end of each cycle

    @property
    def cycles(self) -> int:
        return int(self.activity.shape[0])


def activity_name(code: int) -> str:
    """The name of an activity code (``code<n>`` for one this writer does not know)."""
    return ACTIVITY[code] if 0 <= code < len(ACTIVITY) else f"code{code}"


def trace_format(path: Path) -> str:
    """``"jsonl"`` or ``"vcd"`` from the file suffix; a StencilmapError for any other suffix."""
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise StencilmapError(f"{param('trace')} {path}: the file must end in .jsonl, .ndjson or .vcd")
    return fmt


def write_trace(path: Path, trace: Trace) -> None:
    """Write ``trace`` as JSON Lines or VCD (by ``path``'s suffix), atomically."""
    write_text_atomically(path, trace_text(path, trace))


def trace_text(path: Path, trace: Trace) -> str:
    """``trace`` as JSON Lines or VCD text (by ``path``'s suffix)."""
    _check(trace)
    return "".join(jsonl_lines(trace)) if trace_format(path) == "jsonl" else "".join(vcd_lines(trace))


def _check(trace: Trace) -> None:
    if trace.activity.ndim != 2 or trace.activity.shape[1] != len(trace.modules):
        raise ValueError(
            f"activity has shape {trace.activity.shape}, expected [cycles, {len(trace.modules)}]"
        )
    occ = trace.occupancy
    if occ is not None and (occ.ndim != 2 or occ.shape != (trace.cycles, len(trace.channels))):
        raise ValueError(f"occupancy has shape {occ.shape}, expected [{trace.cycles}, {len(trace.channels)}]")


# ------------------------------------------------------------------------------------------ JSON Lines


def jsonl_lines(trace: Trace) -> Iterator[str]:
    header = {
        "format": "stencilmap-trace",
        "version": 1,
        "design": trace.design,
        "arch": trace.arch,
        "cycles": trace.cycles,
        "total_cycles": trace.total_cycles,
        "modules": list(trace.modules),
        "channels": list(trace.channels) if trace.occupancy is not None else None,
        "activity": list(ACTIVITY),
    }
    yield json.dumps(header) + "\n"
    for c in range(trace.cycles):
        row = trace.activity[c]
        line: dict[str, Any] = {
            "cycle": c,
            "modules": {trace.modules[m]: activity_name(int(row[m])) for m in np.flatnonzero(row)},
        }
        if trace.occupancy is not None:
            occ = trace.occupancy[c]
            line["channels"] = {trace.channels[i]: int(occ[i]) for i in np.flatnonzero(occ)}
        yield json.dumps(line) + "\n"


# ------------------------------------------------------------------------------------------------- VCD


def vcd_lines(trace: Trace) -> Iterator[str]:
    mod_ids = [_vcd_id(i) for i in range(len(trace.modules))]
    ch_ids = [_vcd_id(len(trace.modules) + i) for i in range(len(trace.channels))]
    has_occ = trace.occupancy is not None
    yield "$comment stencilmap trace of design " + _vcd_text(trace.design) + f" ({trace.arch}) $end\n"
    yield "$comment activity: 0 idle, 1 busy, 2 starved, 3 blocked, 4 finished; one time unit = one cycle $end\n"
    yield "$timescale 1 ns $end\n"
    yield "$scope module modules $end\n"
    for ident, name in zip(mod_ids, _unique(trace.modules), strict=True):
        yield f"$var wire 3 {ident} {name} $end\n"
    yield "$upscope $end\n"
    if has_occ:
        yield "$scope module channels $end\n"
        for ident, name in zip(ch_ids, _unique(trace.channels), strict=True):
            yield f"$var integer 32 {ident} {name} $end\n"
        yield "$upscope $end\n"
    yield "$enddefinitions $end\n"
    prev_act: Array | None = None
    prev_occ: Array | None = None
    for c in range(trace.cycles):
        act = trace.activity[c]
        occ = trace.occupancy[c] if trace.occupancy is not None else None
        changes = list(_changes(act, prev_act, mod_ids))
        if occ is not None:
            changes += _changes(occ, prev_occ, ch_ids)
        if changes or c == 0:
            yield f"#{c}\n"
            yield from changes
        prev_act, prev_occ = act, occ
    yield f"#{trace.cycles}\n"


def _changes(values: Array, previous: Array | None, ids: Sequence[str]) -> Iterator[str]:
    """Vector value changes (``b101 id``; VCD extends a shorter value with zeros on the left)."""
    idx = range(len(values)) if previous is None else np.flatnonzero(values != previous)
    for i in idx:
        yield f"b{int(values[i]):b} {ids[int(i)]}\n"


def _vcd_id(n: int) -> str:
    """Short VCD identifier codes from the printable ASCII range ``!`` .. ``~``."""
    chars = []
    n += 1
    while n > 0:
        n, r = divmod(n - 1, 94)
        chars.append(chr(33 + r))
    return "".join(reversed(chars))


def _vcd_text(name: str) -> str:
    """A VCD reference: no whitespace, no brackets (read as bit selects), no dots (read as hierarchy), no
    ``$`` (a name such as ``$end`` would end the declaration it stands in)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _unique(names: Sequence[str]) -> list[str]:
    """VCD references of ``names``, made unique with a numeric suffix where sanitizing collides."""
    taken: set[str] = set()
    out = []
    for name in names:
        base = ref = _vcd_text(name)
        n = 1
        while ref in taken:
            n += 1
            ref = f"{base}_{n}"
        taken.add(ref)
        out.append(ref)
    return out
