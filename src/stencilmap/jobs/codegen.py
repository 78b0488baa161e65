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
from typing import Literal

import numpy as np

from stencilmap.backends.reference import run_reference, undefined_value
from stencilmap.codegen.registry import Generated, emit, target
from stencilmap.codegen.verify import run_csim, write_data
from stencilmap.design.common import or_hint, with_iterate
from stencilmap.design.ir import Design
from stencilmap.design.partition import Partition
from stencilmap.design.registry import BuildConfig, build, check_options
from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError
from stencilmap.io import Array, read_npy
from stencilmap.jobs.partition import PartitionRequest, check_request, partitioned
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.sim.validate import Validation, validate
from stencilmap.transform.fusion import fuse_if

#: The architecture a target builds when none is named: the one whose paper emits that code.
DEFAULT_ARCH = {("hls", "soda"): "soda", ("hls", "stencilflow"): "stencilflow",
                ("opencl", "soda"): "pcm", ("opencl", "stencilflow"): "stencilflow"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class CodegenConfig:
    """Everything ``stencilmap codegen`` was asked to do (None: the program's own hint)."""

    program: Path
    target: str
    out_dir: Path
    arch: str | None = None
    unroll: int | None = None
    iterate: int | None = None
    vector: int | None = None
    tile: tuple[int, ...] | None = None
    shape: tuple[int, ...] | None = None
    device: str | None = None
    inputs: Mapping[str, Path] = field(default_factory=dict)
    seed: int = 0
    verify: bool = False
    hls_include: Path | None = None
    delay_buffers: Literal["computed", "min"] = "computed"
    cache_dir: Path | None = None  # compiled executables, reused across runs (tests)
    fuse: bool = False  # StencilFlow §V-B fusion first (transform.fusion)
    devices: int | None = None  # StencilFlow split over this many devices of ``device`` (design.partition)
    partition: Path | None = None  # ... or as this file says
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
    program, values = bind(config)
    fusion = fuse_if(program, config.fuse)
    program = fusion.program
    arch = config.arch or DEFAULT_ARCH[(config.target, program.format)]
    check_options(arch, _build_config(config))
    request = PartitionRequest(config.devices, config.partition)
    if request.wanted:
        device = load_device(config.device) if config.device is not None else None
        check_request(request, arch, device)
        check_single_device(config.target, True)
        split = partitioned(program, _build_config(config), arch, device, request)
        design, partition = split.design, split.partition
    else:
        design, partition = build(arch, program, _build_config(config)), None
    report = publish_code(
        program, design, config.target, values, config.out_dir, config.verify, config.hls_include,
        config.cache_dir, config.force,
    )  # fmt: skip
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
    return publish_code(program, design, target_name, values, out_dir, verify, hls_include)


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
        report = stage_code(program, design, target_name, values, stage, verify, hls_include, cache_dir)
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
    if data:
        write_data(folder / "data", generated.ports, values)
    verification = _verify(program, values, generated, folder, hls_include, cache_dir) if verify else None
    files = tuple(sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()))
    return CodegenReport(program, design, generated, folder, files, seconds, verification)


def check_single_device(target_name: str, several: bool) -> None:
    """Refuse a design split over devices for a target without networking (only ``opencl`` has SMI)."""
    if several and target_name != "opencl":
        raise StencilmapError(
            f"target '{target_name}' emits one device's kernels: a design split over devices "
            "(--devices / --partition) needs --target opencl (SMI channels between devices)"
        )


def bind(config: CodegenConfig) -> tuple[Program, dict[str, Array]]:
    """The shape-bound program chained ``iterate`` times, and the values of its inputs and params."""
    for flag, value in (
        ("--unroll", config.unroll),
        ("--vector", config.vector),
        ("--iterate", config.iterate),
    ):
        if value is not None and value < 1:
            raise StencilmapError(f"{flag} must be ≥ 1, got {value}")
    program = load_program(config.program)
    supplied = {name: read_npy(name, path) for name, path in config.inputs.items()}
    program = bind_shape(program, supplied, config.shape)
    program = with_iterate(program, or_hint(config.iterate, program.iterate))
    return program, make_inputs(program, supplied, config.seed)


def _build_config(config: CodegenConfig) -> BuildConfig:
    return BuildConfig(
        unroll=config.unroll, iterate=config.iterate, vector=config.vector,
        delay_buffers=config.delay_buffers, device=config.device, tile=config.tile,
    )  # fmt: skip


def _verify(
    program: Program,
    values: Mapping[str, Array],
    gen: Generated,
    stage: Path,
    hls_include: Path | None,
    cache_dir: Path | None,
) -> Verification:
    shape = tuple(int(n or 0) for n in program.shape)
    if gen.runner == "pocl":
        from stencilmap.codegen.opencl_run import run_pocl

        result = run_pocl(gen, stage, stage / "data", shape)
    else:
        result = run_csim(gen, stage, stage / "data", shape, hls_include, cache_dir)
    reference = run_reference(program, values)
    got = result.outputs if result.status == "done" else {
        k: np.zeros_like(v) for k, v in reference.outputs.items()
    }  # fmt: skip
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
        return Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise StencilmapError(f"--out {out_dir}: cannot write there ({exc.strerror})") from None


def publish_folder(stage: Path, out_dir: Path, force: bool = False) -> None:
    """Replace ``out_dir`` by ``stage`` (checked again: ``check_replace_folder``): the old folder is moved
    aside, the new one, marked as stencilmap's (``MARKER``), renamed in."""
    check_replace_folder(out_dir, force)
    (stage / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    stage.chmod(0o777 & ~_umask())
    old: Path | None = None
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
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
