"""The ``analyze`` job: program facts for one design point, and the design a builder makes of them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap.analysis import ProgramAnalysis, analyze_program
from stencilmap.codegen.dot import to_dot
from stencilmap.design.common import check_parameters
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig, build, check_options
from stencilmap.errors import StencilmapError
from stencilmap.io import check_output_file, write_text_atomically
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.verify import verify
from stencilmap.transform.fusion import fuse_if

if TYPE_CHECKING:
    from stencilmap.design.cgra.mapping import CgraMapping
    from stencilmap.design.emax import EmaxMapping
    from stencilmap.design.partition import Partition, Partitioned


@dataclass(frozen=True, slots=True)
class AnalyzeConfig:
    """Everything ``stencilmap analyze`` was asked to do (None: the program's own hint)."""

    program: Path
    arch: str | None = None
    unroll: int | None = None
    iterate: int | None = None
    vector: int | None = None
    shape: tuple[int, ...] | None = None
    dot: Path | None = None
    asm: Path | None = None  # --arch emax / cgra: write the mnemonics / the assembly here
    tile: tuple[int, ...] | None = None  # SODA tile sizes of the inner axes
    fuse: bool = False  # StencilFlow §V-B fusion first (transform.fusion)
    workers: int | None = None  # --arch cgra: workers w (default: the §VI roofline's)
    strip: int | None = None  # --arch cgra: vertical strip width
    device: str | None = None  # the board a partitioned design is split over (--devices / --partition)
    devices: int | None = None  # StencilFlow split over this many devices (design.partition)
    partition: Path | None = None  # ... or as this file says


@dataclass(frozen=True, slots=True)
class AnalyzeReport:
    program: Program
    arch: str
    facts: ProgramAnalysis
    design: Design
    dot: Path | None
    emax: EmaxMapping | None = None
    asm: Path | None = None
    fused: tuple[tuple[str, str], ...] = ()  # --fuse: (producer, consumer) pairs fused (transform.fusion)
    cgra: CgraMapping | None = None
    partition: Partition | None = None  # --devices / --partition: the split over devices


def default_arch(program: Program) -> str:
    """SODA programs map to SODA's reuse chains, StencilFlow programs to StencilFlow pipelines."""
    return "soda" if program.format == "soda" else "stencilflow"


def analyze(config: AnalyzeConfig) -> AnalyzeReport:
    if config.dot is not None:
        check_output_file(config.dot, "--dot")
    check_parameters(config.unroll, config.iterate, config.vector)
    program = bind_shape(load_program(config.program), {}, config.shape)
    if config.iterate is not None and config.iterate != program.iterate:
        program = replace(program, iterate=config.iterate)
        verify(program)
    fusion = fuse_if(program, config.fuse)
    program = fusion.program
    arch = config.arch or default_arch(program)
    if config.asm is not None and arch not in ("emax", "cgra"):
        raise StencilmapError("--asm writes EMAX mnemonics or CGRA assembly: it needs --arch emax or cgra")
    if (config.workers is not None or config.strip is not None) and arch != "cgra":
        raise StencilmapError("--workers and --strip shape the CGRA mapping: they need --arch cgra")
    if config.asm is not None:
        check_output_file(config.asm, "--asm")
    build_config = BuildConfig(
        unroll=config.unroll, iterate=config.iterate, vector=config.vector, tile=config.tile,
        workers=config.workers, strip=config.strip,
    )  # fmt: skip
    check_options(arch, build_config)
    facts = analyze_program(program, unroll=config.unroll, vector=config.vector)
    split = _partitioned(config, program, build_config, arch)
    design = build(arch, program, build_config) if split is None else split.design
    if arch == "cgra":
        return _analyze_cgra(config, program, facts, design, build_config, fusion.fused)
    if config.dot is not None:
        write_text_atomically(config.dot, to_dot(design))
    mapping = None
    if arch == "emax":
        from stencilmap.codegen.emax import mnemonics
        from stencilmap.design.emax import map_emax

        mapping = map_emax(program, BuildConfig(unroll=config.unroll))
        if config.asm is not None:
            write_text_atomically(config.asm, mnemonics(mapping))
    partition = None if split is None else split.partition
    return AnalyzeReport(
        program, arch, facts, design, config.dot, mapping, config.asm, fusion.fused, partition=partition
    )


def _partitioned(
    config: AnalyzeConfig, program: Program, build_config: BuildConfig, arch: str
) -> Partitioned | None:
    """``--devices`` / ``--partition``: the design split over devices of ``--device``, else None."""
    from stencilmap.device.catalog import load_device
    from stencilmap.jobs.partition import PartitionRequest, partitioned

    request = PartitionRequest(config.devices, config.partition)
    if not request.wanted:
        if config.device is not None:
            raise StencilmapError("--device applies to analyze with --devices or --partition")
        return None
    device = load_device(config.device) if config.device is not None else None
    return partitioned(program, build_config, arch, device, request)


def _analyze_cgra(
    config: AnalyzeConfig,
    program: Program,
    facts: ProgramAnalysis,
    design: Design,
    build_config: BuildConfig,
    fused: tuple[tuple[str, str], ...],
) -> AnalyzeReport:
    """The CGRA worker mapping: its assembly (``--asm``) and its DFG coloured by op (``--dot``, §V)."""
    from stencilmap.codegen.cgra import assembly, cgra_dot
    from stencilmap.design.cgra.mapping import map_cgra

    mapping = map_cgra(program, build_config)
    texts = [(config.asm, assembly(mapping)), (config.dot, cgra_dot(mapping))]
    for path, text in texts:
        if path is not None:
            write_text_atomically(path, text)
    return AnalyzeReport(program, "cgra", facts, design, config.dot, None, config.asm, fused, mapping)
