"""The Design IR as JSON (``design.json``): written by ``compile`` and ``explore --save``, loaded again
exactly (``design_from_json(design_to_json(d)) == d``; the program it was built from is not stored).

Parameter values keep their types: ints, floats and strings as JSON scalars, tuples as
``{"tuple": [...]}`` so that a one-element tuple stays a tuple.
"""

from __future__ import annotations

import json
from typing import Any, cast

from stencilmap.design.ir import Channel, Design, Module, ModuleKind, ParamValue, verify_design
from stencilmap.errors import StencilmapError

#: the format's version, checked on load
FORMAT = "stencilmap-design/1"


def design_to_json(design: Design) -> str:
    """The design as indented JSON text, deterministic (modules and channels in design order)."""
    doc = {
        "format": FORMAT,
        "name": design.name,
        "arch": design.arch,
        "device": design.device,
        "clock_mhz": design.clock_mhz,
        "parameters": _params(design.parameters),
        "notes": list(design.notes),
        "modules": [
            {"name": m.name, "kind": m.kind, "latency": m.latency, "params": _params(m.params)}
            for m in design.modules
        ],
        "channels": [
            {
                "name": c.name,
                "src": c.src,
                "dst": c.dst,
                "depth": c.depth,
                "width": c.width,
                "dtype": c.dtype,
                "src_port": c.src_port,
                "dst_port": c.dst_port,
            }
            for c in design.channels
        ],
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def design_from_json(text: str, where: str = "design.json") -> Design:
    """The design ``design_to_json`` wrote, verified; a StencilmapError names what is wrong."""
    try:
        doc = json.loads(text)
        if doc.get("format") != FORMAT:
            raise StencilmapError(f"not a stencilmap design (format {doc.get('format')!r})", where)
        modules = tuple(
            Module(str(m["name"]), cast(ModuleKind, m["kind"]), _unparams(m["params"]), int(m["latency"]))
            for m in doc["modules"]
        )
        channels = tuple(
            Channel(str(c["name"]), str(c["src"]), str(c["dst"]), int(c["depth"]), int(c["width"]),
                    str(c["dtype"]), str(c["src_port"]), str(c["dst_port"]))
            for c in doc["channels"]
        )  # fmt: skip
        design = Design(
            str(doc["name"]), str(doc["arch"]), modules, channels, _unparams(doc["parameters"]),
            doc["device"], doc["clock_mhz"], tuple(str(n) for n in doc["notes"]),
        )  # fmt: skip
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StencilmapError(f"not a stencilmap design: {type(exc).__name__}: {exc}", where) from None
    verify_design(design)
    return design


def _params(params: tuple[tuple[str, ParamValue], ...]) -> list[list[Any]]:
    return [[k, {"tuple": list(v)} if isinstance(v, tuple) else v] for k, v in params]


def _unparams(items: list[list[Any]]) -> tuple[tuple[str, ParamValue], ...]:
    out: list[tuple[str, ParamValue]] = []
    for key, value in items:
        if isinstance(value, dict):
            out.append((str(key), tuple(value["tuple"])))
        elif isinstance(value, int | float | str) and not isinstance(value, bool):
            out.append((str(key), value))
        else:
            raise TypeError(f"parameter {key!r} has a value of type {type(value).__name__}")
    return tuple(out)
