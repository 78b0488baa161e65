"""The ``analyze`` job: program facts for one design point, and the design a builder makes of them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap.analysis import ProgramAnalysis, analyze_program
from stencilmap.arch import arch as arch_of
from stencilmap.arch import default_arch
from stencilmap.codegen.dot import to_dot
from stencilmap.design.common import check_parameters, device_latencies
from stencilmap.design.ir import Design
from stencilmap.errors import StencilmapError, param
from stencilmap.io import check_output_file, write_text_atomically
from stencilmap.point import DesignPoint
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.verify import verify
from stencilmap.transform.fusion import fuse_if

if TYPE_CHECKING:
    from stencilmap.design.cgra.mapping import CgraMapping
    from stencilmap.design.emax import EmaxMapping
    from stencilmap.model.partition import Partition, Partitioned


@dataclass(frozen=True, slots=True, kw_only=True)
class AnalyzeConfig:
    """Everything ``stencilmap analyze`` was asked to do (None: the program's own hint). ``point.device``:
    the board a partitioned design is split over (``devices`` / ``partition``)."""

    program: Path
    point: DesignPoint = field(default_factory=DesignPoint)
    shape: tuple[int, ...] | None = None
    dot: Path | None = None
    asm: Path | None = None  # --arch emax / cgra: write the mnemonics / the assembly here


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


def analyze(config: AnalyzeConfig) -> AnalyzeReport:
    if config.dot is not None:
        check_output_file(config.dot, "--dot")
    check_parameters(config.point.unroll, config.point.iterate, config.point.vector)
    program = bind_shape(load_program(config.program), {}, config.shape)
    if config.point.iterate is not None and config.point.iterate != program.iterate:
        program = replace(program, iterate=config.point.iterate)
        verify(program)
    fusion = fuse_if(program, config.point.fuse)
    program = fusion.program
    arch = config.point.arch or default_arch(program)
    a = arch_of(arch)
    if config.asm is not None and a.mapping is None:
        raise StencilmapError(
            f"{param('asm')} writes EMAX mnemonics or CGRA assembly: it needs {param('arch')} emax or cgra"
        )
    if (config.point.workers is not None or config.point.strip is not None) and "workers" not in a.options:
        raise StencilmapError(
            f"{param('workers')} and {param('strip')} shape the CGRA mapping: they need {param('arch')} cgra"
        )
    if config.asm is not None:
        check_output_file(config.asm, "--asm")
    # the builder's options; --device gives its operator latencies, CGRA fabric or EMAX rows (any architecture)
    build_config = replace(config.point, delay_buffers="computed", fuse=False)
    a.check(build_config)
    facts = analyze_program(
        program,
        unroll=config.point.unroll,
        vector=config.point.vector,
        latencies=device_latencies(config.point.device),
    )
    split = _partitioned(config, program, build_config, arch)
    design = a.build(program, build_config) if split is None else split.design
    if a.mapping == "assembly":
        return _analyze_cgra(
            config, program=program, facts=facts, design=design, build_config=build_config, fused=fusion.fused
        )
    if config.dot is not None:
        write_text_atomically(config.dot, to_dot(design))
    mapping = None
    if a.mapping == "mnemonics":
        from stencilmap.codegen.emax import mnemonics
        from stencilmap.design.emax import map_emax

        mapping = map_emax(program, DesignPoint(unroll=config.point.unroll, device=config.point.device))
        if config.asm is not None:
            write_text_atomically(config.asm, mnemonics(mapping))
    partition = None if split is None else split.partition
    return AnalyzeReport(
        program,
        arch=arch,
        facts=facts,
        design=design,
        dot=config.dot,
        emax=mapping,
        asm=config.asm,
        fused=fusion.fused,
        partition=partition,
    )


def _partitioned(
    config: AnalyzeConfig, program: Program, build_config: DesignPoint, arch: str
) -> Partitioned | None:
    """``--devices`` / ``--partition``: the design split over devices of ``--device``, else None."""
    from stencilmap.device.catalog import load_device
    from stencilmap.jobs.partition import PartitionRequest, partitioned

    request = PartitionRequest(config.point.devices, config.point.partition)
    if not request.wanted:
        return None
    device = load_device(config.point.device) if config.point.device is not None else None
    return partitioned(
        program, config=replace(build_config, device=None), arch=arch, device=device, request=request
    )


def _analyze_cgra(
    config: AnalyzeConfig,
    program: Program,
    facts: ProgramAnalysis,
    design: Design,
    build_config: DesignPoint,
    fused: tuple[tuple[str, str], ...],
) -> AnalyzeReport:
    """The CGRA worker mapping: its assembly (``--asm``) and its DFG coloured by op (``--dot``, §V)."""
    from stencilmap.codegen.cgra import assembly, cgra_dot
    from stencilmap.design.cgra.mapping import map_cgra
    from stencilmap.model.cgra import roofline_workers_of

    mapping = map_cgra(program, build_config, roofline_workers_of)
    texts = [(config.asm, assembly(mapping)), (config.dot, cgra_dot(mapping))]
    for path, text in texts:
        if path is not None:
            write_text_atomically(path, text)
    return AnalyzeReport(
        program,
        arch="cgra",
        facts=facts,
        design=design,
        dot=config.dot,
        emax=None,
        asm=config.asm,
        fused=fused,
        cgra=mapping,
    )
