"""The ``codegen`` job: build a design of a program, emit a target's files for it, and with ``verify``
run them here (C simulation / PoCL) and compare the outputs with the reference executor.

Steps (one call each in ``codegen``): bind the program and its inputs → build the design → emit the
target → stage the files (and the input data) in a temporary folder → verify → publish the folder
as ``out_dir`` with one rename, so nothing is ever half-written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from stencilmap import native
from stencilmap.arch import arch as arch_of
from stencilmap.arch import check_options
from stencilmap.backends.reference import run_reference, undefined_value
from stencilmap.codegen.registry import HOST, Generated, emit, from_program, program_design, target
from stencilmap.codegen.verify import check_hls_include, run_csim, write_data
from stencilmap.design.common import or_hint, with_iterate
from stencilmap.design.ir import Design
from stencilmap.design.registry import reject_options
from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError, param
from stencilmap.io import PUBLISH_LOCK, Array, read_npy
from stencilmap.jobs.partition import PartitionRequest, check_request, partitioned
from stencilmap.model.partition import Partition
from stencilmap.point import DesignPoint
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.sim.validate import Validation, validate
from stencilmap.transform.fusion import fuse_if

#: The architecture a target builds when none is named: the one whose paper emits that code.
DEFAULT_ARCH = {
    ("hls", "soda"): "soda",
    ("hls", "stencilflow"): "stencilflow",
    ("opencl", "soda"): "pcm",
    ("opencl", "stencilflow"): "stencilflow",
    ("dot", "soda"): "soda",
    ("dot", "stencilflow"): "stencilflow",
    ("emax", "soda"): "emax",
    ("emax", "stencilflow"): "emax",
    ("cgra", "soda"): "cgra",
    ("cgra", "stencilflow"): "cgra",
    ("c-openmp", "soda"): HOST,
    ("c-openmp", "stencilflow"): HOST,
    ("cuda", "soda"): HOST,
    ("cuda", "stencilflow"): HOST,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class CodegenConfig:
    """Everything ``stencilmap codegen`` was asked to do (None: the program's own hint)."""

    program: Path
    target: str
    out_dir: Path
    point: DesignPoint = field(default_factory=DesignPoint)
    shape: tuple[int, ...] | None = None
    inputs: Mapping[str, Path] = field(default_factory=dict)
    seed: int = 0
    verify: bool = False
    hls_include: Path | None = None
    cache_dir: Path | None = None  # compiled executables, reused across runs (tests)
    force: bool = False  # replace an --out folder stencilmap did not write (check_replace_folder)


@dataclass(frozen=True, slots=True)
class Verification:
    """A run of the generated code compared with the reference."""

    validation: Validation
    compile_seconds: float
    run_seconds: float
    message: str
    outputs: tuple[Path, ...]

    @property
    def valid(self) -> bool:
        return self.validation.valid


@dataclass(frozen=True, slots=True)
class CodegenReport:
    program: Program
    design: Design
    generated: Generated
    out_dir: Path
    files: tuple[str, ...]
    generate_seconds: float
    verification: Verification | None
    fused: tuple[tuple[str, str], ...] = ()  # --fuse: (producer, consumer) pairs fused (transform.fusion)
    partition: Partition | None = None  # --devices / --partition: how the design was split
    not_run: str = ""  # --verify asked, nothing ran here: why ("not run: no GPU", jobs.codegen_checks)

    def moved_to(self, out_dir: Path) -> CodegenReport:
        """The report of the same files after their folder was renamed to ``out_dir``."""
        v = self.verification
        if v is not None:
            outs = tuple(out_dir / p.relative_to(self.out_dir) for p in v.outputs)
            v = Verification(v.validation, v.compile_seconds, v.run_seconds, v.message, outs)
        return replace(self, out_dir=out_dir, verification=v)


def codegen(config: CodegenConfig) -> CodegenReport:
    """Run the whole job; see the module docstring."""
    target(config.target)  # an unknown target is a usage error: say so before building anything
    check_replace_folder(config.out_dir, config.force)
    check_hls_include(config.hls_include)
    program, values = bind(config)
    arch = config.point.arch or DEFAULT_ARCH[(config.target, program.format)]
    fusion = fuse_if(program, config.point.fuse, arch)
    program = fusion.program
    if from_program(config.target):
        _check_host(config)
        arch = HOST
    check_options(arch, _build_config(config))
    request = PartitionRequest(config.point.devices, config.point.partition)
    if arch == HOST:
        check_single_device(config.target, request.wanted)
        design, partition = program_design(program), None
    elif request.wanted:
        device = load_device(config.point.device) if config.point.device is not None else None
        check_request(request, arch, device)
        check_single_device(config.target, True)
        split = partitioned(program, config=_build_config(config), arch=arch, device=device, request=request)
        design, partition = split.design, split.partition
    else:
        design, partition = arch_of(arch).build(program, _build_config(config)), None
    report = publish_code(
        program,
        design=design,
        target_name=config.target,
        values=values,
        out_dir=config.out_dir,
        verify=config.verify,
        hls_include=config.hls_include,
        cache_dir=config.cache_dir,
        force=config.force,
    )
    return replace(report, fused=fusion.fused, partition=partition)


def write_code(
    program: Program,
    design: Design,
    target_name: str,
    out_dir: Path,
    supplied: Mapping[str, Array],
    seed: int = 0,
    verify: bool = False,
    hls_include: Path | None = None,
) -> CodegenReport:
    """The job for a design already built (the Python API): ``program`` is the design's shape-bound,
    chained program; ``supplied`` input arrays (the others generated from ``seed``)."""
    target(target_name)
    values = make_inputs(program, supplied, seed)
    if from_program(target_name):  # host code is the program's, whatever design was built
        design = program_design(program)
    return publish_code(
        program,
        design=design,
        target_name=target_name,
        values=values,
        out_dir=out_dir,
        verify=verify,
        hls_include=hls_include,
    )


def publish_code(
    program: Program,
    design: Design,
    target_name: str,
    values: Mapping[str, Array],
    out_dir: Path,
    verify: bool = False,
    hls_include: Path | None = None,
    cache_dir: Path | None = None,
    force: bool = False,
) -> CodegenReport:
    """Emit, stage, verify and publish ``design``'s code in ``out_dir`` (all files or none)."""
    stage = stage_folder(out_dir, force)
    try:
        report = stage_code(
            program,
            design=design,
            target_name=target_name,
            values=values,
            folder=stage,
            verify=verify,
            hls_include=hls_include,
            cache_dir=cache_dir,
        )
        publish_folder(stage, out_dir, force)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return report.moved_to(out_dir)


def stage_code(
    program: Program,
    design: Design,
    target_name: str,
    values: Mapping[str, Array],
    folder: Path,
    verify: bool = False,
    hls_include: Path | None = None,
    cache_dir: Path | None = None,
    data: bool = True,
) -> CodegenReport:
    """Emit ``design``'s code and (with ``data``) its input data into the existing ``folder`` and, with
    ``verify``, run it here against the reference (``compile`` stages the code inside its own output
    folder; for grids too large to ship as data it passes only the params' values and ``data=False``)."""
    check_single_device(target_name, design.count("network") > 0)
    start = time.perf_counter()
    generated = emit(target_name, design, program, values)
    seconds = time.perf_counter() - start
    for name, text in generated.files:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if data and generated.ports:  # the targets that read no files (emax, cgra, dot, host code) get no data/
        write_data(folder / "data", generated.ports, values)
    verification: Verification | str | None = None
    if verify:
        verification = _verify(
            program,
            values=values,
            gen=generated,
            stage=folder,
            hls_include=hls_include,
            cache_dir=cache_dir,
            design=design,
        )
    not_run = verification if isinstance(verification, str) else ""
    checked = verification if isinstance(verification, Verification) else None
    files = tuple(sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()))
    return CodegenReport(
        program,
        design=design,
        generated=generated,
        out_dir=folder,
        files=files,
        generate_seconds=seconds,
        verification=checked,
        not_run=not_run,
    )


def _check_host(config: CodegenConfig) -> None:
    """A target generated from the program alone takes no design options."""
    point = config.point
    if point.arch is not None:
        raise StencilmapError(
            f"{param('arch')} does not apply to target '{config.target}' (it generates from the program)"
        )
    reject_options(
        f"target '{config.target}'",
        ("unroll", point.unroll),
        ("vector", point.vector),
        ("tile", point.tile),
        ("device", point.device),
        ("delay_buffers", "min" if point.delay_buffers == "min" else None),
    )


def check_single_device(target_name: str, several: bool) -> None:
    """Refuse a design split over devices for a target without networking (only ``opencl`` has SMI)."""
    if several and target_name != "opencl":
        raise StencilmapError(
            f"target '{target_name}' emits one device's kernels: a design split over devices "
            f"({param('devices')} / {param('partition')}) needs {param('target')} opencl (SMI channels between devices)"
        )


def bind(config: CodegenConfig) -> tuple[Program, dict[str, Array]]:
    """The shape-bound program chained ``iterate`` times, and the values of its inputs and params."""
    for flag, value in (
        ("unroll", config.point.unroll),
        ("vector", config.point.vector),
        ("iterate", config.point.iterate),
    ):
        if value is not None and value < 1:
            raise StencilmapError(f"{param(flag)} must be ≥ 1, got {value}")
    program = load_program(config.program)
    supplied = {name: read_npy(name, path) for name, path in config.inputs.items()}
    program = bind_shape(program, supplied, config.shape)
    program = with_iterate(program, or_hint(config.point.iterate, program.iterate))
    return program, make_inputs(program, supplied, config.seed)


def _build_config(config: CodegenConfig) -> DesignPoint:
    """The builder's options: the point without the CGRA's (which no code target takes)."""
    return replace(config.point, workers=None, strip=None)


def _verify(
    program: Program,
    values: Mapping[str, Array],
    gen: Generated,
    stage: Path,
    hls_include: Path | None,
    cache_dir: Path | None,
    design: Design,
) -> Verification | str:
    """Run the files here (``Generated.runner``) and compare with the reference; a string: why nothing ran."""
    shape = tuple(int(n or 0) for n in program.shape)
    if gen.runner not in ("csim", "pocl"):
        from stencilmap.jobs.codegen_checks import run_here

        ran = run_here(gen, design, program, values)
        if isinstance(ran, str):
            return ran
        result = ran
    elif gen.runner == "pocl":
        from stencilmap.codegen.opencl_run import run_pocl

        result = run_pocl(gen, stage, stage / "data", shape)
    else:
        result = run_csim(gen, stage, stage / "data", shape, hls_include, cache_dir)
    reference = run_reference(program, values)
    got = (
        result.outputs
        if result.status == "done"
        else {k: np.zeros_like(v) for k, v in reference.outputs.items()}
    )
    validation = validate(result.status, got, reference.outputs, reference.defined)
    written: list[Path] = []
    if result.status == "done":
        (stage / "csim").mkdir(exist_ok=True)
        for name, mask in reference.defined.items():
            arr = np.array(got[name], copy=True)
            arr[~mask] = undefined_value(arr.dtype)
            np.save(stage / "csim" / f"{name}.npy", arr, allow_pickle=False)
            written.append(stage / "csim" / f"{name}.npy")
    return Verification(
        validation, result.compile_seconds, result.run_seconds, result.message, tuple(written)
    )


#: The file ``publish_folder`` leaves in every folder it publishes: only a folder holding it (or an empty one)
#: is replaced by a later ``codegen`` / ``compile`` without ``--force`` (issue 19 §3).
MARKER = ".stencilmap-out"
MARKER_TEXT = (
    "This folder was written by stencilmap; the next codegen/compile into it replaces it as a whole.\n"
)


def check_replace_folder(out_dir: Path, force: bool = False) -> None:
    """Refuse to replace ``out_dir`` unless it is absent, an empty folder or a folder stencilmap published
    (it holds ``MARKER``); ``force`` replaces any folder. Never the current folder or one above it, and
    never a symbolic link or a file."""
    where = f"--out {out_dir}"
    try:
        mode = os.lstat(out_dir).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StencilmapError(exc.strerror or str(exc), where) from None
    if stat.S_ISLNK(mode):
        raise StencilmapError("is a symbolic link: stencilmap replaces only a folder it wrote", where)
    if not stat.S_ISDIR(mode):
        raise StencilmapError("exists and is not a folder", where)
    here = Path.cwd().resolve()
    target = out_dir.resolve()
    if target == here or target in here.parents:
        raise StencilmapError("is the current folder or one above it, which is never replaced", where)
    if force:
        return
    try:
        with os.scandir(out_dir) as entries:
            names = {e.name for e in entries}
        marked = MARKER in names and stat.S_ISREG(os.lstat(out_dir / MARKER).st_mode)
    except OSError as exc:
        raise StencilmapError(exc.strerror or str(exc), where) from None
    if names and not marked:
        raise StencilmapError(
            f"holds files stencilmap did not write (no {MARKER} file in it), and the folder would be "
            "replaced as a whole: name a new or empty folder, or add --force",
            where,
        )


def stage_folder(out_dir: Path, force: bool = False) -> Path:
    """A fresh folder beside ``out_dir`` (same file system, so publishing is a rename), once
    ``check_replace_folder`` allows replacing ``out_dir``."""
    check_replace_folder(out_dir, force)
    parent = out_dir.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return native.temporary_folder(f".{out_dir.name}.", parent, ".tmp")  # an interrupt removes it
    except OSError as exc:
        raise StencilmapError(f"{param('out')} {out_dir}: cannot write there ({exc.strerror})") from None


def publish_folder(stage: Path, out_dir: Path, force: bool = False) -> None:
    """Replace ``out_dir`` by ``stage`` (checked again: ``check_replace_folder``): the old folder is moved
    aside, the new one, marked as stencilmap's (``MARKER``), renamed in (an interrupt waits for both)."""
    check_replace_folder(out_dir, force)
    (stage / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    stage.chmod(0o777 & ~_umask())
    old: Path | None = None
    with PUBLISH_LOCK:
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old.", dir=stage.parent))
            out_dir.rename(old / "previous")
        try:
            stage.rename(out_dir)
        except OSError:
            if old is not None:  # put the old folder back
                with contextlib.suppress(OSError):
                    (old / "previous").rename(out_dir)
                shutil.rmtree(old, ignore_errors=True)
            raise
        native.release(stage)
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
