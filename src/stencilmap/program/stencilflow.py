"""StencilFlow JSON front end (``.json`` → Program IR), validated with a pydantic schema.

Every key of the published format is accepted (see the corpus README); an unknown key, a wrong type or a
malformed computation string is an error that names its JSON path. Computation strings are Python
(``name = expr`` statements separated by ``;`` or newlines) and are parsed with Python's own ``ast``.
"""

from __future__ import annotations

import ast
import json
import re
import warnings as python_warnings
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from stencilmap.errors import Location, StencilmapError, schema_message, schema_path
from stencilmap.io import JsonPathError, parse_user_json, shown_json_key
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import MAX_DEPTH, Expr, refs
from stencilmap.program.ir import (
    SHRINK,
    Boundary,
    Constant,
    DataSource,
    Hints,
    Input,
    Program,
    Stencil,
    Temp,
    axis_names,
)
from stencilmap.program.stencilflow_expr import TOO_DEEP, Context, ExprConverter, ast_depth

# ------------------------------------------------------------------------------------------------ schema


class _Strict(BaseModel):
    """Fields take only their own JSON type (no ``"4"`` for 4, ``true`` for 1 or ``32.0`` for 32; an integer
    is a number) and numbers must be finite (``1e400`` overflows to infinity)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def _json_kind(value: Any) -> str | None:
    """The tag of a JSON value's type, as the unions below name their members (``[`` keeps it out of error
    paths): ``[int]``, ``[float]``, ``[str]``, ``[list]``, ``[object]``; None for true/false/null."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return "[int]"
    kinds = {float: "[float]", str: "[str]", list: "[list]", dict: "[object]"}
    return next((k for t, k in kinds.items() if isinstance(value, t)), None)


def _one_of(*tags: str) -> Any:
    """A callable discriminator choosing the union member by the value's JSON type (pydantic's own union
    would try each member, and report each member's error)."""

    def pick(value: Any) -> str | None:
        kind = _json_kind(value)
        if kind == "[int]" and "[int]" not in tags:
            kind = "[float]"  # an integer is a number
        return kind if kind in tags else None

    return pick


def _expected(tags: tuple[str, ...], what: str) -> Discriminator:
    return Discriminator(
        _one_of(*tags), custom_error_type="wrong_type", custom_error_message=f"expected {what}"
    )


_Finite = Annotated[float, Field(allow_inf_nan=False)]


class BoundarySpec(_Strict):
    """``{"type": "constant", "value": v}``, ``{"type": "copy"}``, ``{"type": "shrink"}``, or the older
    ``{"btype": "shrink", "halo": [...]}`` (the halo list is accepted; the real halo follows from the accesses)."""

    type: Literal["constant", "copy", "shrink"] | None = None
    btype: Literal["constant", "copy", "shrink"] | None = None
    value: float | None = None
    halo: (
        list[
            Annotated[
                Annotated[int, Tag("[int]")] | Annotated[Literal["halo"], Tag("[str]")],
                _expected(("[int]", "[str]"), "an integer or 'halo'"),
            ]
        ]
        | None
    ) = None


class InputSpec(_Strict):
    data: (
        Annotated[
            Annotated[str, Tag("[str]")]
            | Annotated[_Finite, Tag("[float]")]
            | Annotated[list[Any], Tag("[list]")],
            _expected(
                ("[str]", "[float]", "[list]"),
                "a string (a file, constant:V or random:A-B), a number or a list",
            ),
        ]
        | None
    ) = None
    data_type: str
    input_dims: list[str] | None = None
    dimensions: list[str] | None = None


class ConstantSpec(_Strict):
    value: float
    data_type: str | None = None


class StencilSpec(_Strict):
    computation_string: str
    boundary_conditions: Annotated[
        Annotated[dict[str, BoundarySpec], Tag("[object]")] | Annotated[Literal["shrink"], Tag("[str]")],
        _expected(("[object]", "[str]"), "an object or 'shrink'"),
    ] = Field(default_factory=dict)
    data_type: str


class ProgramSpec(_Strict):
    inputs: dict[str, InputSpec]
    outputs: list[str]
    dimensions: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1, max_length=3)]
    vectorization: Annotated[int, Field(ge=1)] = 1
    constants: dict[
        str,
        Annotated[
            Annotated[int, Tag("[int]")]
            | Annotated[_Finite, Tag("[float]")]
            | Annotated[ConstantSpec, Tag("[object]")],
            _expected(("[int]", "[float]", "[object]"), "a number or an object"),
        ],
    ] = Field(default_factory=dict)
    program: dict[str, StencilSpec]
    #: Time steps (stencilmap's extension, as SODA's ``iterate``) and which output feeds which input of
    #: the next step, by name: ``{"ez": "Ez"}``; inputs fed by no output keep their values every step.
    iterate: Annotated[int, Field(ge=1)] = 1
    feedback: dict[str, str] = Field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ loader


def load_stencilflow(path: str | Path) -> Program:
    """Parse and validate a StencilFlow ``.json`` program."""
    from stencilmap.io import read_user_text

    p = Path(path)
    text = read_user_text(p, str(p), 4 * 2**20, "a program")  # as program.load.MAX_PROGRAM_BYTES
    return parse_stencilflow(text, str(p))


#: Deepest nesting of JSON arrays and objects accepted (inline data of a 3-D input nests 4 deep).
MAX_JSON_DEPTH = 32
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def parse_stencilflow(text: str, filename: str = "<string>") -> Program:
    _check_json_depth(text, filename)
    try:
        raw = parse_user_json(text)
    except JsonPathError as exc:
        raise StencilmapError(str(exc), Location(filename, json_path=exc.path)) from None
    except json.JSONDecodeError as exc:
        raise StencilmapError(f"invalid JSON: {exc.msg}", f"{filename}:{exc.lineno}:{exc.colno}") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        why = "an integer has more than 4,300 digits" if "digits" in str(exc) else str(exc)
        raise StencilmapError(f"invalid JSON: {why}", filename) from None
    _check_strings(raw, filename)
    try:
        spec = ProgramSpec.model_validate(raw)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = Location(filename, json_path=schema_path(err["loc"]))
        raise StencilmapError(schema_message(err), where) from None
    return _build(spec, Path(filename).stem, filename)


def _check_json_depth(text: str, filename: str) -> None:
    """Refuse arrays and objects nested deeper than ``MAX_JSON_DEPTH`` before parsing."""
    level = 0
    for m in re.finditer(r"[\[\]{}]", _JSON_STRING.sub("", text)):
        level += 1 if m.group() in "[{" else -1
        if level > MAX_JSON_DEPTH:
            raise StencilmapError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep", filename)


def _check_strings(raw: Any, filename: str) -> None:
    """Refuse strings that are not valid Unicode (lone surrogates from ``\\ud800`` escapes)."""
    stack: list[tuple[Any, str]] = [(raw, "")]
    while stack:
        value, path = stack.pop()
        items = (
            value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        )
        for key, item in items:
            sub = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))
            for text in (key, item):
                if isinstance(text, str) and not _is_unicode(text):
                    where = Location(filename, json_path=ascii(sub)[1:-1] or "(top level)")
                    raise StencilmapError("string is not valid Unicode (a lone surrogate)", where)
            stack.append((item, sub))


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _build(spec: ProgramSpec, name: str, filename: str) -> Program:
    _check_outputs(spec.outputs, filename)
    rank = len(spec.dimensions)
    names = axis_names(rank)
    warnings: list[str] = []
    inputs = tuple(_input(n, s, names, filename) for n, s in spec.inputs.items())
    constants = tuple(_constant(n, c, filename) for n, c in spec.constants.items())
    ctx = Context(
        filename, names, {i.name: i.axes for i in inputs}, set(spec.program), {c.name for c in constants}
    )
    stencils = tuple(_stencil(n, s, ctx, warnings) for n, s in spec.program.items())
    return Program(
        name=name,
        format="stencilflow",
        semantics="numpy",
        shape=tuple(spec.dimensions),
        inputs=inputs,
        stencils=stencils,
        outputs=tuple(spec.outputs),
        constants=constants,
        iterate=spec.iterate,
        feedback=tuple(spec.feedback.items()),
        hints=Hints(vectorization=spec.vectorization),
        path=filename,
        warnings=tuple(warnings),
        locs=tuple((k, f"{filename}: {path}") for k, path in _SETTINGS.items()),
    )


#: Program-wide settings (``Program.locs`` keys) and their JSON paths.
_SETTINGS = {
    "iterate": "iterate",
    "vectorization": "vectorization",
    "shape": "dimensions",
    "outputs": "outputs",
}


def _check_outputs(outputs: list[str], filename: str) -> None:
    """Refuse an output listed twice, at the second listing."""
    seen: set[str] = set()
    for n, out in enumerate(outputs):
        if out in seen:
            raise StencilmapError(
                f"output '{out}' is listed twice", Location(filename, json_path=f"outputs[{n}]")
            )
        seen.add(out)


def _dtype(name: str, filename: str, path: str) -> str:
    t = dt.parse_dtype(name)
    if t is None:
        raise StencilmapError(f"bad dtype '{name}'", Location(filename, json_path=path))
    return t


def _input(name: str, spec: InputSpec, names: tuple[str, ...], filename: str) -> Input:
    where = f"inputs.{name}"
    dims = spec.input_dims if spec.input_dims is not None else spec.dimensions
    if dims is None:
        axes = tuple(range(len(names)))
    else:
        unknown = [d for d in dims if d not in names]
        if unknown:
            raise StencilmapError(
                f"unknown dimension '{unknown[0]}' (this program's are {', '.join(names)})",
                Location(filename, json_path=f"{where}.input_dims"),
            )
        axes = tuple(names.index(d) for d in dims)
        if list(axes) != sorted(set(axes)):
            raise StencilmapError(
                f"dimensions must be distinct and in the order {', '.join(names)}",
                Location(filename, json_path=f"{where}.input_dims"),
            )
    dtype = _dtype(spec.data_type, filename, f"{where}.data_type")
    return Input(
        name,
        dtype,
        axes,
        _source(spec.data, filename, f"{where}.data"),
        loc=f"{filename}: inputs.{shown_json_key(name)}",
    )


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANDOM = re.compile(rf"^random:\s*({_NUMBER})\s*-\s*({_NUMBER})\s*$")


def _source(data: str | float | list[Any] | None, filename: str, path: str) -> DataSource | None:
    where = Location(filename, json_path=path)
    if data is None:
        return None
    if isinstance(data, int | float):
        return DataSource("scalar", value=float(data))
    if isinstance(data, list):
        flat = _flatten(data)
        if flat is None:
            raise StencilmapError("inline data must be a (nested) list of numbers", where)
        return DataSource("inline", values=tuple(flat))
    if data.startswith("constant:"):
        try:
            return DataSource("constant", value=float(data[len("constant:") :]))
        except ValueError:
            raise StencilmapError(f"bad constant '{data}'; expected constant:VALUE", where) from None
    if data.startswith("random:"):
        m = _RANDOM.match(data)
        if m is None:
            raise StencilmapError(f"bad random source '{data}'; expected random:LOW-HIGH", where)
        low, high = float(m.group(1)), float(m.group(2))
        if not low < high:
            raise StencilmapError(f"random range '{data}' is empty", where)
        return DataSource("random", low=low, high=high)
    if Path(data).suffix.lower() not in (".dat", ".csv"):
        raise StencilmapError(
            f"unsupported data '{data}': expected .dat, .csv, constant:V or random:A-B", where
        )
    return DataSource("file", path=data)


def _flatten(values: list[Any]) -> list[float] | None:
    out: list[float] = []
    for v in values:
        if isinstance(v, list):
            inner = _flatten(v)
            if inner is None:
                return None
            out.extend(inner)
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append(float(v))
        else:
            return None
    return out


def _constant(name: str, spec: int | float | ConstantSpec, filename: str) -> Constant:
    if isinstance(spec, ConstantSpec):
        if spec.data_type is not None:
            dtype = _dtype(spec.data_type, filename, f"constants.{name}.data_type")
            return Constant(name, spec.value, dtype, loc=f"{filename}: constants.{shown_json_key(name)}")
        value = spec.value
    else:
        value = spec
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise StencilmapError(
            "integer does not fit in int64", Location(filename, json_path=f"constants.{name}")
        )
    weak = dt.WEAK_INT if isinstance(value, int) else dt.WEAK_FLOAT
    return Constant(name, value, weak, loc=f"{filename}: constants.{shown_json_key(name)}")


# ---------------------------------------------------------------------------------- computation strings


def _stencil(name: str, spec: StencilSpec, ctx: Context, warnings: list[str]) -> Stencil:
    where = f"program.{name}.computation_string"
    try:
        with python_warnings.catch_warnings():  # Python's SyntaxWarnings would print a second line
            python_warnings.simplefilter("ignore")
            module = ast.parse(spec.computation_string.strip(), mode="exec")
    except SyntaxError as exc:
        raise StencilmapError(
            f"syntax error in computation string at column {exc.offset}: {exc.msg}",
            Location(ctx.filename, json_path=where),
        ) from None
    except (RecursionError, MemoryError):  # Python's parser gives up on deep nesting with these
        raise StencilmapError(TOO_DEEP, Location(ctx.filename, json_path=where)) from None
    if ast_depth(module) > MAX_DEPTH:
        raise StencilmapError(TOO_DEEP, Location(ctx.filename, json_path=where))
    conv = ExprConverter(ctx, where)
    temps: list[Temp] = []
    result: Expr | None = None
    body = module.body
    if not body:
        raise StencilmapError("empty computation string", Location(ctx.filename, json_path=where))
    for n, stmt in enumerate(body):
        last = n == len(body) - 1
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = conv.convert(stmt.value)
            if last:
                result = value
            else:
                temps.append(Temp(stmt.targets[0].id, None, value))
                conv.temps.add(stmt.targets[0].id)
        elif isinstance(stmt, ast.Expr) and last:
            result = conv.convert(stmt.value)
        else:
            raise conv.fail(stmt, "expected 'name = expression' statements")
    assert result is not None
    dtype = _dtype(spec.data_type, ctx.filename, f"program.{name}.data_type")
    boundary = _boundaries(name, spec, result, temps, ctx, warnings)
    return Stencil(
        name, dtype, result, tuple(temps), boundary, loc=f"{ctx.filename}: program.{shown_json_key(name)}"
    )


def _boundaries(
    name: str, spec: StencilSpec, result: Expr, temps: list[Temp], ctx: Context, warnings: list[str]
) -> tuple[tuple[str, Boundary], ...]:
    read = {r.field for r in refs(result)}
    for t in temps:
        read.update(r.field for r in refs(t.expr))
    if spec.boundary_conditions == "shrink":
        return tuple((f, SHRINK) for f in sorted(read))
    out: dict[str, Boundary] = {}
    for field_name, b in spec.boundary_conditions.items():
        where = Location(ctx.filename, json_path=f"program.{name}.boundary_conditions.{field_name}")
        kind = b.type or b.btype
        if kind is None:
            raise StencilmapError("boundary condition needs a 'type'", where)
        if kind == "constant" and b.value is None:
            raise StencilmapError("a constant boundary condition needs a 'value'", where)
        if field_name not in read:
            warnings.append(
                f"{where}: stencil '{name}' does not read '{field_name}'; boundary condition ignored"
            )
            continue
        out[field_name] = Boundary(kind, b.value if b.value is not None else 0.0)
    for field_name in sorted(read - set(out)):
        if ctx.field_axes(field_name):
            warnings.append(
                f"{ctx.filename}: program.{name}.boundary_conditions: no condition for '{field_name}'; using shrink"
            )
        out[field_name] = SHRINK
    return tuple(sorted(out.items()))
