"""Builders are looked up by name: ``build("soda", program, DesignPoint(unroll=4))``.

What else varies with the architecture (its options, lanes, models, simulators, targets) is in ``arch``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from stencilmap.design.common import MAX_STAGES, check_parameters, on_device_banks
from stencilmap.design.ir import Design, verify_design
from stencilmap.errors import StencilmapError, param
from stencilmap.point import DesignPoint
from stencilmap.program.ir import Program
from stencilmap.program.verify import MAX_LANES

#: The builders' configuration is the design point (``stencilmap.point``); the name stays for the builders.
BuildConfig = DesignPoint


def reject_options(target: str, *flags: tuple[str, object]) -> None:
    """Options ``target`` (e.g. "the pcm design", "the cgra model") has no use for are errors, not
    silently ignored: ``flags`` are (option name, value given or None)."""
    for flag, value in flags:
        if value is not None:
            raise StencilmapError(f"{param(flag)} does not apply to {target}")


#: Most processing elements (unroll × iterate) a design of explicit options may have.
MAX_PES = 4096


def check_design_size(unroll: int | None, iterate: int | None) -> None:
    """Refuse explicit ``--unroll`` × ``--iterate`` above ``MAX_PES``: refused at once rather than after minutes
    of building and modelling (issue 19 §9)."""
    if unroll is not None and iterate is not None and unroll * iterate > MAX_PES:
        raise StencilmapError(
            f"{param('unroll')} {unroll} × {param('iterate')} {iterate} = {unroll * iterate:,} processing "
            f"elements: at most {MAX_PES:,} are built"
        )


#: A builder: the program, the design point, and inputs its caller chose with a model (CGRA's roofline).
Builder = Callable[..., Design]
_BUILDERS: dict[str, Builder] = {}


def register(name: str) -> Callable[[Builder], Builder]:
    def add(fn: Builder) -> Builder:
        _BUILDERS[name] = fn
        return fn

    return add


def builders() -> tuple[str, ...]:
    _load()
    return tuple(sorted(_BUILDERS))


def build(name: str, program: Program, config: BuildConfig, **inputs: object) -> Design:
    """Build and verify a design of a shape-bound program with the named builder; ``inputs`` go to the
    builder (``roofline=`` for CGRA: the §VI roofline's worker count, which the caller's model gives)."""
    _load()
    limits = ((config.unroll, MAX_LANES), (config.iterate, MAX_STAGES), (config.vector, MAX_LANES))
    if any(
        value is not None and value > top for value, top in limits
    ):  # below 1: builders check what they use
        check_parameters(config.unroll, config.iterate, config.vector)
    if program.iterate > MAX_STAGES:
        raise StencilmapError(f"iterate must be between 1 and {MAX_STAGES:,}, got {program.iterate:,}")
    if name not in _BUILDERS:
        raise StencilmapError(f"unknown architecture '{name}' (known: {', '.join(sorted(_BUILDERS))})")
    notes: tuple[str, ...] = ()
    if config.device is not None:
        program, notes = _device_banks(program, config.device)
    design = _BUILDERS[name](program, config, **inputs)
    verify_design(design)
    return replace(design, notes=design.notes + notes) if notes else design


def _device_banks(program: Program, device: str) -> tuple[Program, tuple[str, ...]]:
    """The program's banks on the device's (``design.common.on_device_banks``)."""
    from stencilmap.device.catalog import load_device  # the model layer, loaded only when a device is named

    dev = load_device(device)
    return on_device_banks(program, dev.dram_banks, dev.name)


def _load() -> None:
    """Import the builder modules so that their ``@register`` runs."""
    from stencilmap.design import cgra, emax, pcm, pipeline, soda  # noqa: F401
