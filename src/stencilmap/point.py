"""``DesignPoint``: every design option of one configuration, in one frozen value.

The builders (``design.registry.build``), the models (``estimate``), the simulators, the code generators
and the explorer all take a design point instead of copying its fields; the command line generates its
design options from the fields (``cli.common.design_options``: ``--unroll``, ``--iterate``, ... with the
``Option`` each field's metadata holds), and the Python API takes them as keywords of the same names.
``None`` means the program's own hint (SODA unroll/iterate/tile, StencilFlow W) or the architecture's
default.

A leaf module (it imports nothing of stencilmap at run time), so that the command line can read the fields
without importing a stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

DelayBuffers = Literal["computed", "min"]
Parts = tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class NetworkLink:
    """The network between two devices (StencilFlow §VI-B, SMI): ``latency`` cycles a hop, and
    ``bytes_per_cycle`` that all the streams between the two devices share. ``packet_bytes`` /
    ``payload_bytes`` (0: a raw byte stream): the links carry packets of ``packet_bytes`` of which
    ``payload_bytes`` are data — SMI's 32-byte network packets with a 4-byte header (``wire_bytes``)."""

    latency: int
    bytes_per_cycle: float
    packet_bytes: int = 0
    payload_bytes: int = 0

    def wire_bytes(self, lanes: int, itemsize: int) -> float:
        """Bytes on the links per beat of a stream of ``lanes`` elements of ``itemsize`` bytes. SMI packs
        whole elements into a packet's payload (⌊payload / element⌋ a packet, the header's element count);
        a beat wider than the payload is split into the fewest sub-streams of equal lanes that fit one
        (StencilFlow §VI-B: SMI splits a stream over channels; StencilFlow's split wants even chunks), each
        packed alike. W = 1 float32: 7 a packet, 4.57 B a beat; W = 4: 16 B, one a packet, 32 B a beat;
        W = 8: two sub-streams of 16 B, 64 B a beat. Assumed: a beat is one SMI element, as StencilFlow's
        vector streams are; stencilmap's own SMI code (``codegen.opencl_channels``) pushes a beat's W scalars,
        7 float32 a packet at any W."""
        beat = lanes * itemsize
        if self.payload_bytes <= 0 or self.packet_bytes <= 0:
            return float(beat)
        least = -(-beat // self.payload_bytes)
        n = next((k for k in range(least, lanes + 1) if lanes % k == 0), lanes)
        sub = beat // n
        if sub > self.payload_bytes:  # an element wider than a payload: packets of its pieces
            return n * self.packet_bytes * -(-sub // self.payload_bytes)
        return n * self.packet_bytes / (self.payload_bytes // sub)


#: The architectures a design can be built for (``arch.ARCHS`` has what varies with each).
BUILT_ARCHS = ("soda", "stencilflow", "pcm", "emax", "cgra")


@dataclass(frozen=True, slots=True)
class Option:
    """How the command line offers a design option: ``--{name} METAVAR`` with ``help``; ``kind``: how its
    text is read (``int``, ``sizes`` like 64,128, ``choice`` of ``choices``, ``name``, ``flag``, ``count``
    an int in 1 … 64, ``file``); ``dest``: the command's parameter when it is not the field's name."""

    help: str
    metavar: str | None = None
    kind: Literal["int", "sizes", "choice", "name", "flag", "count", "file"] = "int"
    choices: tuple[str, ...] = ()
    dest: str | None = None


def _cli(help: str, metavar: str | None = None, kind: Any = "int", **kw: Any) -> dict[str, Option]:
    return {"cli": Option(help, metavar, kind, **kw)}


@dataclass(frozen=True, slots=True, kw_only=True)
class DesignPoint:
    """One point of the design space. Which options an architecture uses: ``arch.Arch.options``."""

    #: the microarchitecture (None: the program's own, ``arch.default_arch``)
    arch: str | None = field(
        default=None,
        metadata=_cli(
            "Microarchitecture  [default: soda for .soda, stencilflow for .json].",
            kind="choice",
            choices=BUILT_ARCHS,
        ),
    )
    #: k PEs per stage (SODA), P_cell (PCM), p (EMAX), workers (CGRA, as estimate takes it)
    unroll: int | None = field(
        default=None, metadata=_cli("PEs per stage k (SODA) / P_cell (PCM)  [default: the program's].", "K")
    )
    #: q stages (SODA), d PCMs, CGRA layers chained on chip
    iterate: int | None = field(
        default=None, metadata=_cli("Time steps chained on chip: q stages / d PCMs.", "Q")
    )
    #: W (StencilFlow)
    vector: int | None = field(
        default=None, metadata=_cli("Vector width W (StencilFlow)  [default: the program's].", "W")
    )
    #: SODA tile sizes of all but the outermost axis (C order)
    tile: tuple[int, ...] | None = field(
        default=None, metadata=_cli("SODA tile sizes of the inner axes.", "T1,...", "sizes")
    )
    #: CGRA workers w (None: the §VI roofline's choice)
    workers: int | None = field(
        default=None, metadata=_cli("CGRA workers w  [default: the §VI roofline's].", "W")
    )
    #: CGRA vertical strip width (None: one strip unless the buffering overflows)
    strip: int | None = field(default=None, metadata=_cli("CGRA vertical strip width (§III-B).", "WIDTH"))
    #: CGRA tiles splitting the grid, each a fabric with its own workers and bandwidth (§VIII-A; None: 1)
    tiles: int | None = field(
        default=None,
        metadata=_cli(
            "CGRA tiles splitting the outermost axis, each with its own workers and memory bandwidth (§VIII-A: 16).",
            "N",
            "count",
        ),
    )
    #: StencilFlow delay buffers: the computed depths, or the minimum
    delay_buffers: DelayBuffers = field(
        default="computed",
        metadata=_cli(
            "StencilFlow delay buffers: the computed depths, or depth 1 (to see a deadlock).",
            kind="choice",
            choices=("computed", "min"),
        ),
    )
    #: a catalog name or a PATH.json: latencies and banks of the builders (and the board of a split)
    device: str | None = field(
        default=None, metadata=_cli("Target device (recorded in the design).", "NAME", "name")
    )
    #: StencilFlow §V-B fusion first (transform.fusion)
    fuse: bool = field(
        default=False,
        metadata=_cli(
            "First fuse every stencil into its only reader where that is exact (StencilFlow §V-B).",
            kind="flag",
        ),
    )
    #: StencilFlow split over this many devices (design.partition, min cut)
    devices: int | None = field(
        default=None,
        metadata=_cli(
            "Split the StencilFlow design over N devices of --device, cutting the fewest streams.",
            "N",
            "count",
        ),
    )
    #: ... or over the user's parts (a JSON file, or the parts themselves in the Python API)
    partition: Path | Parts | None = field(
        default=None,
        metadata=_cli(
            'Split the StencilFlow design as FILE says: {"parts": [["stencil", ...], ...]}, one list per device.',
            "FILE",
            "file",
            dest="partition_file",
        ),
    )
    #: StencilFlow: the stencil nodes of each device (what the builder takes; ``design.partition`` sets it)
    parts: Parts | None = None
    #: the network joining the devices of ``parts``
    link: NetworkLink | None = None

    @property
    def split(self) -> bool:
        """Whether the design is asked to be split over several devices (``devices`` / ``partition``)."""
        return self.devices is not None or self.partition is not None


def point_options() -> dict[str, tuple[Option, Any]]:
    """The fields the command line offers, in order: how it offers each, and the field's default."""
    return {f.name: (f.metadata["cli"], f.default) for f in fields(DesignPoint) if "cli" in f.metadata}
