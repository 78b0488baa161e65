"""The microarchitectures as plug-ins: ``arch(name)`` says all that varies with one.

Per architecture: the design options its builder uses (``DesignPoint`` fields; the others are refused),
the design parameter holding its lanes (points per cycle), the option that sets them, the program
format it is the default of, whether ``model.timing`` predicts its designs, how it is built
(``design.registry``), predicted (``model.estimate``: the streamed-design model, the CGRA paper's §VI,
the EMAX paper's §5.1, or a host roofline) and simulated (the dataflow engine ``sim``, ``sim.emax`` or
``sim.cgra``), and the code-generation targets that express it (``codegen.registry``).

Layers: this package sits above ``design``, ``model``, ``sim`` and ``codegen`` and below ``explore``,
``jobs`` and the API; it imports those layers only inside its functions, so that importing it is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from importlib import import_module
from typing import TYPE_CHECKING, Literal, cast

from stencilmap.design.registry import check_design_size, reject_options
from stencilmap.errors import StencilmapError
from stencilmap.point import DesignPoint

if TYPE_CHECKING:
    from stencilmap.design.ir import Design
    from stencilmap.model.report import EstimateReport, ModelContext
    from stencilmap.program.ir import Program

Simulator = Literal["dataflow", "emax", "cgra"]

__all__ = ["ARCHS", "Arch", "DesignPoint", "arch", "archs", "check_options", "default_arch"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Arch:
    """One microarchitecture."""

    name: str
    options: frozenset[str]  # the DesignPoint options its builder uses; ``check_options`` refuses the others
    lanes: str | None  # the design parameter holding the lanes (points per cycle), if any
    lanes_option: Literal["unroll", "vector"] = "unroll"  # the option that sets the lanes
    native_format: str | None = None  # the program format it is the default architecture of
    timed: bool = False  # ``model.timing.design_timing`` predicts its designs (the streamed FPGA designs)
    streamed: bool = False  # a streamed FPGA design the explorer searches (``explore``)
    tiled: bool = False  # takes SODA tile sizes (``tile``)
    splits: bool = False  # can be split over several devices (StencilFlow §VI-B, ``design.partition``)
    mapping: str | None = None  # what ``analyze --asm`` writes for it (a mapping's text), if anything
    buffering: Literal["chains", "reuse", "delays"] | None = (
        None  # its on-chip buffers, as analyze reports them
    )
    builds: bool = True  # has a builder in ``design.registry`` (a host roofline has none)
    #: "module:function" of the model whose choice the builder takes as ``roofline=`` (CGRA §VI's workers)
    roofline: str | None = None
    pe_grid: bool = (
        False  # its PEs are unroll × iterate (SODA §3, OpenCL §3): bounded by ``check_design_size``
    )
    simulator: Simulator | None = None  # the cycle-level simulator of its designs
    model: str  # "module:function" predicting one configuration (``ModelContext`` → ``EstimateReport``)

    @property
    def targets(self) -> tuple[str, ...]:
        """The code-generation targets that express its designs (``codegen.registry``)."""
        from stencilmap.codegen.registry import target, targets

        return tuple(t for t in targets() if self.name in target(t).archs)

    def check(self, point: DesignPoint) -> None:
        """Refuse the options of ``point`` this architecture's builder would ignore (``--vector`` for
        SODA, ``--tile`` for PCM, ``--delay-buffers min`` but for StencilFlow, ...)."""
        given = {
            "unroll": point.unroll,
            "iterate": point.iterate,
            "vector": point.vector,
            "tile": point.tile,
            "delay_buffers": "min" if point.delay_buffers == "min" else None,
            "workers": point.workers,
            "strip": point.strip,
            "tiles": point.tiles,
            "parts": point.parts,
        }
        reject_options(
            f"the {self.name} design", *((k, v) for k, v in given.items() if k not in self.options)
        )
        if self.pe_grid:
            check_design_size(point.unroll, point.iterate)

    def build(self, program: Program, point: DesignPoint) -> Design:
        """Build and verify its design of the shape-bound ``program`` (``design.registry.build``)."""
        from stencilmap.design.registry import build

        if self.roofline is None:
            return build(self.name, program, point)
        module, function = self.roofline.split(":")
        return build(self.name, program, point, roofline=getattr(import_module(module), function))

    def predict(self, ctx: ModelContext) -> EstimateReport:
        """The model's prediction of one configuration (``estimate``)."""
        module, function = self.model.split(":")
        return cast("EstimateReport", getattr(import_module(module), function)(ctx))

    def lanes_of(self, design: Design) -> int:
        """Points ``design`` processes per cycle (1 when the architecture names no lanes parameter)."""
        value = dict(design.parameters).get(self.lanes or "", 1)
        return int(value) if isinstance(value, int) else 1


_STREAMED = "stencilmap.model.estimate:spatial"

#: Every architecture, by name.
ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        Arch(
            name="soda",
            pe_grid=True,
            options=frozenset({"unroll", "iterate", "tile"}),
            lanes="k",
            native_format="soda",
            timed=True,
            streamed=True,
            tiled=True,
            buffering="chains",
            simulator="dataflow",
            model=_STREAMED,
        ),
        Arch(
            name="stencilflow",
            options=frozenset({"vector", "iterate", "delay_buffers", "parts"}),
            lanes="W",
            lanes_option="vector",
            native_format="stencilflow",
            timed=True,
            streamed=True,
            splits=True,
            buffering="delays",
            simulator="dataflow",
            model=_STREAMED,
        ),
        Arch(
            name="pcm",
            pe_grid=True,
            options=frozenset({"unroll", "iterate"}),
            lanes="P_cell",
            timed=True,
            streamed=True,
            buffering="reuse",
            simulator="dataflow",
            model=_STREAMED,
        ),
        Arch(  # iterate: the mapping refuses more than one step, saying why
            name="emax",
            options=frozenset({"unroll", "iterate"}),
            lanes=None,
            mapping="mnemonics",
            simulator="emax",
            model="stencilmap.model.emax:estimate_emax",
        ),
        Arch(  # unroll: the workers, as estimate takes it
            name="cgra",
            roofline="stencilmap.model.cgra:roofline_workers_of",
            options=frozenset({"unroll", "iterate", "workers", "strip", "tiles"}),
            lanes="workers",
            mapping="assembly",
            simulator="cgra",
            model="stencilmap.model.estimate:cgra",
        ),
        Arch(
            name="roofline",
            options=frozenset(),
            lanes=None,
            builds=False,
            model="stencilmap.model.estimate:roofline_machine",
        ),
    )
}


def arch(name: str) -> Arch:
    """The architecture called ``name``."""
    found = ARCHS.get(name)
    if found is None:
        known = ", ".join(sorted(archs(builds=True)))  # as ``design.registry.build`` says it
        raise StencilmapError(f"unknown architecture '{name}' (known: {known})")
    return found


def archs(**facts: object) -> tuple[str, ...]:
    """The names of the architectures with the given facts, e.g. ``archs(streamed=True)``."""
    return tuple(a.name for a in ARCHS.values() if all(getattr(a, k) == v for k, v in facts.items()))


def default_arch(program: Program, supported: tuple[str, ...] | None = None) -> str:
    """SODA programs map to SODA's reuse chains, StencilFlow programs to StencilFlow pipelines (the
    architecture whose ``native_format`` is the program's, StencilFlow for other formats); with
    ``supported`` (a device's architectures), the first of those when the native one is not among them."""
    native = next((a.name for a in ARCHS.values() if a.native_format == program.format), "stencilflow")
    if supported is None or native in supported:
        return native
    return supported[0]


def check_options(name: str, point: DesignPoint) -> None:
    """``arch(name).check(point)`` for a known architecture (an unknown one is the builder's to refuse)."""
    found = ARCHS.get(name)
    if found is not None:
        found.check(point)


#: The names of ``DesignPoint``'s fields, in order.
POINT_FIELDS = tuple(f.name for f in fields(DesignPoint))
