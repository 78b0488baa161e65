"""The Design IR: hardware as modules joined by bounded channels (FIFOs with a depth and a width).

Module kinds cover the microarchitectures stencilmap builds:

* ``reader`` / ``writer``: off-chip memory ports (bank, burst width, vector width);
* ``forward``: a one-element register that taps a reuse chain and forwards to PEs and the next segment;
* ``fifo``: a reuse-chain FIFO segment; ``shift_register``: an OpenCL-style shift register with taps;
* ``internal_buffer`` / ``delay``: StencilFlow's per-field window buffer and per-edge delay buffer;
* ``broadcast``: one input copied to several consumers;
* ``network``: a stream crossing from one device to another (StencilFlow §VI-B, SMI): ``latency`` cycles,
  at most ``rate`` beats a cycle, ``depth`` beats in flight (``design.partition``);
* ``pe``: a stencil's expression for one lane (pipelined, II = 1, ``latency`` cycles);
* ``emax_pe``: one PE of an EMAX mapping (``design.emax``), its instructions as parameters; EMAX designs
  run on their own simulator (``sim.emax``), not the dataflow engine.
* ``cgra_pe``: one single-instruction PE of a triggered-instruction CGRA (``design.cgra``), its op, grid
  place and constants as parameters; an ``AGEN`` (address generator) has no input, ``DONE`` no output.
  CGRA designs run on their own simulator (``sim.cgra``).

Every channel has exactly one producer and one consumer; a PE declares the input ports it needs
(``params["inputs"]``) and each must be fed by exactly one channel. Readers have no input, writers no
output, every other module has both — except a PE that declares no input port (a stencil reading no
field, e.g. ``out = 2.0``): it is a generator, firing whenever its outputs have room.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program

ModuleKind = Literal[
    "reader",
    "writer",
    "forward",
    "fifo",
    "shift_register",
    "internal_buffer",
    "delay",
    "broadcast",
    "pe",
    "emax_pe",
    "cgra_pe",
    "network",
]
ParamValue = int | float | str | tuple[int, ...] | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Module:
    """One hardware block. ``params`` is a sorted tuple of (key, value) pairs (hashable, deterministic)."""

    name: str
    kind: ModuleKind
    params: tuple[tuple[str, ParamValue], ...] = ()
    latency: int = 0

    def param(self, key: str, default: ParamValue | None = None) -> ParamValue | None:
        for k, v in self.params:
            if k == key:
                return v
        return default


def params(**values: ParamValue | None) -> tuple[tuple[str, ParamValue], ...]:
    """Module parameters from keywords, sorted, without the ``None`` ones."""
    return tuple(sorted((k, v) for k, v in values.items() if v is not None))


@dataclass(frozen=True, slots=True)
class Channel:
    """A bounded FIFO from ``src`` to ``dst`` holding ``depth`` beats of ``width`` elements of ``dtype``."""

    name: str
    src: str
    dst: str
    depth: int
    width: int = 1
    dtype: str = "float32"
    src_port: str = ""
    dst_port: str = ""


@dataclass(frozen=True, slots=True)
class Design:
    """A complete design: its modules and channels, the builder and parameters that made it, its target."""

    name: str
    arch: str
    modules: tuple[Module, ...]
    channels: tuple[Channel, ...]
    parameters: tuple[tuple[str, ParamValue], ...] = ()
    device: str | None = None
    clock_mhz: float | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)
    #: the shape-bound, chained program the design was built from (set by the Python API's ``build``)
    program: Program | None = field(default=None, compare=False, repr=False)
    # look-ups by name, derived once: a design of 10,000 modules is walked in linear time
    _by_name: dict[str, Module] = field(init=False, repr=False, compare=False)
    _inputs: dict[str, tuple[Channel, ...]] = field(init=False, repr=False, compare=False)
    _outputs: dict[str, tuple[Channel, ...]] = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        """One line: a design of 10,000 modules does not print them (``modules`` and ``channels`` do)."""
        params = "".join(f", {k}={v!r}" for k, v in self.parameters)
        device = f", device={self.device!r}" if self.device else ""
        return (
            f"Design({self.name!r}, arch={self.arch!r}, {len(self.modules)} modules, "
            f"{len(self.channels)} channels{params}{device})"
        )

    def __post_init__(self) -> None:
        ins: dict[str, list[Channel]] = {}
        outs: dict[str, list[Channel]] = {}
        for c in self.channels:
            ins.setdefault(c.dst, []).append(c)
            outs.setdefault(c.src, []).append(c)
        object.__setattr__(self, "_by_name", {m.name: m for m in reversed(self.modules)})
        object.__setattr__(self, "_inputs", {k: tuple(v) for k, v in ins.items()})
        object.__setattr__(self, "_outputs", {k: tuple(v) for k, v in outs.items()})

    def module(self, name: str) -> Module:
        return self._by_name[name]

    def count(self, kind: str) -> int:
        return sum(1 for m in self.modules if m.kind == kind)

    def kinds(self) -> dict[str, int]:
        """Number of modules of each kind, sorted by kind."""
        return dict(sorted(Counter(m.kind for m in self.modules).items()))

    def inputs_of(self, name: str) -> tuple[Channel, ...]:
        return self._inputs.get(name, ())

    def outputs_of(self, name: str) -> tuple[Channel, ...]:
        return self._outputs.get(name, ())


def verify_design(design: Design) -> None:
    """Raise StencilmapError unless the design is well formed (see the module docstring)."""
    where = f"design {design.name}"
    names = [m.name for m in design.modules]
    dup = [n for n, k in Counter(names).items() if k > 1]
    if dup:
        raise StencilmapError(f"duplicate module '{dup[0]}'", where)
    cdup = [n for n, k in Counter(c.name for c in design.channels).items() if k > 1]
    if cdup:
        raise StencilmapError(f"duplicate channel '{cdup[0]}'", where)
    known = set(names)
    for c in design.channels:
        if c.src not in known or c.dst not in known:
            raise StencilmapError(f"channel '{c.name}' joins unknown modules {c.src} -> {c.dst}", where)
        if c.src == c.dst:
            raise StencilmapError(f"channel '{c.name}' loops on module '{c.src}'", where)
        if c.depth < 1 or c.width < 1:
            raise StencilmapError(
                f"channel '{c.name}' has depth {c.depth} and width {c.width}; both must be ≥ 1", where
            )
    into: dict[str, list[Channel]] = {n: [] for n in names}
    out_of: dict[str, list[Channel]] = {n: [] for n in names}
    for c in design.channels:
        into[c.dst].append(c)
        out_of[c.src].append(c)
    for m in design.modules:
        _check_module(m, into[m.name], out_of[m.name], where)


def _check_module(m: Module, ins: list[Channel], outs: list[Channel], where: str) -> None:
    if m.latency < 0:
        raise StencilmapError(f"module '{m.name}' has negative latency", where)
    if m.kind == "reader" and ins:
        raise StencilmapError(f"reader '{m.name}' has input channels", where)
    if m.kind == "writer" and outs:
        raise StencilmapError(f"writer '{m.name}' has output channels", where)
    if m.kind != "reader" and not ins and not _generator(m):
        raise StencilmapError(f"module '{m.name}' ({m.kind}) has no input", where)
    if m.kind != "writer" and not outs and not (m.kind == "cgra_pe" and m.param("op") == "DONE"):
        raise StencilmapError(f"module '{m.name}' ({m.kind}) has no output", where)
    if m.kind == "pe":
        wanted = m.param("inputs", ())
        assert isinstance(wanted, tuple)
        fed = Counter(c.dst_port for c in ins)
        for port in wanted:
            if fed[str(port)] != 1:
                raise StencilmapError(
                    f"PE '{m.name}' input '{port}' is fed by {fed[str(port)]} channels", where
                )
        extra = set(fed) - {str(p) for p in wanted}
        if extra:
            raise StencilmapError(f"PE '{m.name}' has channels into undeclared ports {sorted(extra)}", where)


def _generator(m: Module) -> bool:
    """A PE that declares no input port (it computes a constant expression), or a CGRA address generator."""
    return (m.kind == "pe" and m.param("inputs", ()) == ()) or (
        m.kind == "cgra_pe" and m.param("op") == "AGEN"
    )
