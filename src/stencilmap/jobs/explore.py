"""``explore --save DIR``: the winner of an exploration as files — its design (``design.json``, the Design IR
in the form ``design.serialize`` reads back), its Graphviz DOT (``codegen.dot``), and ``commands.txt``, the
exact ``stencilmap estimate`` and ``stencilmap simulate`` commands that reproduce the winner's prediction and
its simulation. All three appear together or none does (``io.OutputSet``)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from stencilmap.arch import arch
from stencilmap.codegen.dot import to_dot
from stencilmap.design.serialize import design_to_json
from stencilmap.errors import StencilmapError, param
from stencilmap.explore import Candidate, ExploreConfig, ExploreResult
from stencilmap.explore.resources import build_candidate
from stencilmap.io import OutputSet, check_output_dir
from stencilmap.names import comment, path_argument

#: The files ``save_winner`` writes into its folder.
SAVED_FILES = ("design.json", "design.dot", "commands.txt")


def check_save_dir(directory: Path) -> None:
    """Refuse, before exploring, a ``--save`` folder that cannot be written."""
    check_output_dir(directory, "--save")


def save_winner(result: ExploreResult, config: ExploreConfig, directory: Path) -> tuple[Path, ...]:
    """Write the best candidate's files into ``directory``; return their paths."""
    best = result.best
    if best is None:
        raise StencilmapError(
            f"{param('save')}: no configuration fits the device, so there is no winner to save"
        )
    space = result.space
    design = build_candidate(
        best.arch,
        program=space.program,
        lanes=best.lanes,
        q=best.iterate,
        tile=_tile(best, space.shape),
        device=space.builder_device,
    )
    paths = tuple(directory / name for name in SAVED_FILES)
    texts = (
        json.dumps(design_to_json(design), indent=1) + "\n",
        to_dot(design),
        winner_commands(result, config),
    )
    with OutputSet() as files:
        for path, text in zip(paths, texts, strict=True):
            files.add_text(path, text)
        files.publish()
    return paths


def winner_commands(result: ExploreResult, config: ExploreConfig) -> str:
    """``commands.txt``: the ``estimate`` of the winner on the explored grid and the ``simulate`` of it on
    the grid explore simulated it on, each one line a shell runs as it is."""
    best = result.best
    assert best is not None
    space = result.space
    design = _design_options(best, space.shape)
    program = shlex.quote(path_argument(str(config.program)))
    device = shlex.quote(path_argument(config.device))  # as given: a catalog name or the user's PATH.json
    estimate = [
        "stencilmap",
        "estimate",
        program,
        "--device",
        device,
        *design,
        "--shape",
        _csv(space.shape),
        "--iterations",
        str(space.iterations),
    ]
    if config.clock_mhz is not None:
        estimate += ["--clock-mhz", f"{config.clock_mhz:g}"]
    sim_shape = result.winner.shape if result.winner is not None else space.shape
    simulate = ["stencilmap", "simulate", program, "--device", device, *design, "--shape", _csv(sim_shape)]
    lines = [
        f"# The winner of stencilmap explore on {comment(space.device.name)}: {best.arch}, "
        + ", ".join(f"{k}={v}" for k, v in best.parameters().items() if v is not None and k != "arch"),
        "# Its prediction on the explored grid (the model explore ranks by):",
        " ".join(estimate),
        "# Its simulation on the grid explore simulated it on"
        + (" (scaled down)" if sim_shape != space.shape else "")
        + ": compare the report's predicted and simulated cycles",
        " ".join(simulate),
    ]
    if config.clock_mhz is not None:
        lines.insert(
            4,
            f"# (simulate runs at {comment(space.device.name)}'s own clock, not at {config.clock_mhz:g} MHz)",
        )
    return "\n".join(lines) + "\n"


def _design_options(best: Candidate, shape: tuple[int, ...]) -> list[str]:
    lanes = f"--{arch(best.arch).lanes_option}"
    options = ["--arch", best.arch, lanes, str(best.lanes), "--iterate", str(best.iterate)]
    tile = _tile(best, shape)
    if tile is not None:
        options += ["--tile", _csv(tile)]
    return options


def _tile(best: Candidate, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """SODA's tile sizes, the whole inner axes when untiled (so no program hint can tile it); None for
    the other builders."""
    if not arch(best.arch).tiled:
        return None
    return best.tile if best.tile is not None else shape[1:]


def _csv(values: tuple[int, ...]) -> str:
    return ",".join(str(n) for n in values)
