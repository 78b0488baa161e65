"""The Design IR as JSON: ``design_to_json`` and ``design_from_json`` round-trip a design exactly
(``design_from_json(design_to_json(d)) == d``, notes included).

Parameters are kept as ``[key, value]`` pairs in their order; a tuple value is a JSON list (of ints or of
strings), an int stays an int and a float a float (``json`` writes ``4.0`` for the float 4).
"""

from __future__ import annotations

from typing import Any

from stencilmap.design.ir import Channel, Design, Module, ModuleKind, ParamValue, verify_design
from stencilmap.errors import StencilmapError

#: The ``format`` field of a design file, and its version.
FORMAT = "stencilmap-design"
VERSION = 1

_CHANNEL_FIELDS = ("name", "src", "dst", "depth", "width", "dtype", "src_port", "dst_port")


def design_to_json(design: Design) -> dict[str, Any]:
    """A JSON-ready dict holding every field of ``design``."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": design.name,
        "arch": design.arch,
        "device": design.device,
        "clock_mhz": design.clock_mhz,
        "parameters": _pairs_to_json(design.parameters),
        "modules": [
            {"name": m.name, "kind": m.kind, "latency": m.latency, "params": _pairs_to_json(m.params)}
            for m in design.modules
        ],
        "channels": [{f: getattr(c, f) for f in _CHANNEL_FIELDS} for c in design.channels],
        "notes": list(design.notes),
    }


def design_from_json(data: Any) -> Design:
    """The design ``design_to_json`` wrote (verified); a malformed file is a one-line StencilmapError."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StencilmapError(f'not a stencilmap design (no "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise StencilmapError(f"design file version {data.get('version')!r}; this stencilmap reads {VERSION}")
    try:
        design = Design(
            name=str(data["name"]),
            arch=str(data["arch"]),
            modules=tuple(
                Module(str(m["name"]), _kind(m["kind"]), _pairs_from_json(m["params"]), int(m["latency"]))
                for m in data["modules"]
            ),
            channels=tuple(Channel(**{f: c[f] for f in _CHANNEL_FIELDS}) for c in data["channels"]),
            parameters=_pairs_from_json(data["parameters"]),
            device=data["device"],
            clock_mhz=data["clock_mhz"],
            notes=tuple(str(n) for n in data["notes"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StencilmapError(f"malformed design file: {type(exc).__name__}: {exc}") from None
    verify_design(design)
    return design


def _pairs_to_json(pairs: tuple[tuple[str, ParamValue], ...]) -> list[list[Any]]:
    return [[k, list(v) if isinstance(v, tuple) else v] for k, v in pairs]


def _pairs_from_json(pairs: list[list[Any]]) -> tuple[tuple[str, ParamValue], ...]:
    return tuple((str(k), tuple(v) if isinstance(v, list) else v) for k, v in pairs)


def _kind(value: Any) -> ModuleKind:
    from typing import get_args

    if value not in get_args(ModuleKind):
        raise ValueError(f"unknown module kind {value!r}")
    kind: ModuleKind = value
    return kind
