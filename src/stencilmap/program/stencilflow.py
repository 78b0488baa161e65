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
from pydantic import BaseModel, ConfigDict, Field

from stencilmap.errors import Location, StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import (
    FUNCTIONS,
    MAX_DEPTH,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    Ref,
    Select,
    Unary,
    Var,
    refs,
)
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

# ------------------------------------------------------------------------------------------------ schema


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BoundarySpec(_Strict):
    """``{"type": "constant", "value": v}``, ``{"type": "copy"}``, ``{"type": "shrink"}``, or the older
    ``{"btype": "shrink", "halo": [...]}`` (the halo list is accepted; the real halo follows from the accesses)."""

    type: Literal["constant", "copy", "shrink"] | None = None
    btype: Literal["constant", "copy", "shrink"] | None = None
    value: float | None = None
    halo: list[int | Literal["halo"]] | None = None


class InputSpec(_Strict):
    data: str | float | list[Any] | None = None
    data_type: str
    input_dims: list[str] | None = None
    dimensions: list[str] | None = None


class ConstantSpec(_Strict):
    value: float
    data_type: str | None = None


class StencilSpec(_Strict):
    computation_string: str
    boundary_conditions: dict[str, BoundarySpec] | Literal["shrink"] = Field(default_factory=dict)
    data_type: str


class ProgramSpec(_Strict):
    inputs: dict[str, InputSpec]
    outputs: list[str]
    dimensions: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1, max_length=3)]
    vectorization: Annotated[int, Field(ge=1)] = 1
    constants: dict[str, int | float | ConstantSpec] = Field(default_factory=dict)
    program: dict[str, StencilSpec]
    #: Time steps (stencilmap's extension, as SODA's ``iterate``) and which output feeds which input of
    #: the next step, by name: ``{"ez": "Ez"}``; inputs fed by no output keep their values every step.
    iterate: Annotated[int, Field(ge=1)] = 1
    feedback: dict[str, str] = Field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ loader


def load_stencilflow(path: str | Path) -> Program:
    """Parse and validate a StencilFlow ``.json`` program."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StencilmapError("no such file", str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StencilmapError(f"cannot read: {exc}", str(p)) from None
    return parse_stencilflow(text, str(p))


#: Deepest nesting of JSON arrays and objects accepted (inline data of a 3-D input nests 4 deep).
MAX_JSON_DEPTH = 32
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def parse_stencilflow(text: str, filename: str = "<string>") -> Program:
    _check_json_depth(text, filename)
    try:
        raw = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise StencilmapError(f"invalid JSON: {exc.msg}", f"{filename}:{exc.lineno}:{exc.colno}") from None
    except ValueError as exc:  # an integer of more than 4,300 digits, NaN or Infinity
        why = "an integer has more than 4,300 digits" if "digits" in str(exc) else str(exc)
        raise StencilmapError(f"invalid JSON: {why}", filename) from None
    _check_strings(raw, filename)
    try:
        spec = ProgramSpec.model_validate(raw)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        path = _json_path(err["loc"])
        raise StencilmapError(_pydantic_message(err), Location(filename, json_path=path)) from None
    return _build(spec, Path(filename).stem, filename)


def _check_json_depth(text: str, filename: str) -> None:
    """Refuse arrays and objects nested deeper than ``MAX_JSON_DEPTH`` before parsing."""
    level = 0
    for m in re.finditer(r"[\[\]{}]", _JSON_STRING.sub("", text)):
        level += 1 if m.group() in "[{" else -1
        if level > MAX_JSON_DEPTH:
            raise StencilmapError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep", filename)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


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


def _json_path(loc: tuple[int | str, ...]) -> str:
    parts = [p for p in loc if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))]
    text = ""
    for p in parts:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "(top level)"


def _pydantic_message(err: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    return str(err["msg"])


def _build(spec: ProgramSpec, name: str, filename: str) -> Program:
    rank = len(spec.dimensions)
    names = axis_names(rank)
    warnings: list[str] = []
    inputs = tuple(_input(n, s, names, filename) for n, s in spec.inputs.items())
    constants = tuple(_constant(n, c, filename) for n, c in spec.constants.items())
    ctx = _Context(
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
    )


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
    return Input(name, dtype, axes, _source(spec.data, filename, f"{where}.data"), loc=f"{filename}: {where}")


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
            return Constant(name, spec.value, _dtype(spec.data_type, filename, f"constants.{name}.data_type"))
        value = spec.value
    else:
        value = spec
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise StencilmapError(
            "integer does not fit in int64", Location(filename, json_path=f"constants.{name}")
        )
    weak = dt.WEAK_INT if isinstance(value, int) else dt.WEAK_FLOAT
    return Constant(name, value, weak)


# ---------------------------------------------------------------------------------- computation strings


class _Context:
    """Names visible to computation strings."""

    def __init__(
        self,
        filename: str,
        axes: tuple[str, ...],
        inputs: dict[str, tuple[int, ...]],
        stencils: set[str],
        constants: set[str],
    ) -> None:
        self.filename = filename
        self.axes = axes
        self.inputs = inputs
        self.stencils = stencils
        self.constants = constants

    def field_axes(self, name: str) -> tuple[int, ...] | None:
        if name in self.inputs:
            return self.inputs[name]
        if name in self.stencils:
            return tuple(range(len(self.axes)))
        return None


def _stencil(name: str, spec: StencilSpec, ctx: _Context, warnings: list[str]) -> Stencil:
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
        raise StencilmapError(_TOO_DEEP, Location(ctx.filename, json_path=where)) from None
    if _ast_depth(module) > MAX_DEPTH:
        raise StencilmapError(_TOO_DEEP, Location(ctx.filename, json_path=where))
    conv = _ExprConverter(ctx, where)
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
    return Stencil(name, dtype, result, tuple(temps), boundary, loc=f"{ctx.filename}: program.{name}")


_TOO_DEEP = f"expression nested more than {MAX_DEPTH:,} levels deep"


def _ast_depth(tree: ast.AST) -> int:
    best = 0
    stack = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        best = max(best, level)
        stack.extend((c, level + 1) for c in ast.iter_child_nodes(node))
    return best


def _boundaries(
    name: str, spec: StencilSpec, result: Expr, temps: list[Temp], ctx: _Context, warnings: list[str]
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


_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%", ast.FloorDiv: "//",
    ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
}  # fmt: skip
_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}  # fmt: skip
_UNOPS: dict[type[ast.unaryop], str] = {ast.USub: "-", ast.UAdd: "+", ast.Not: "!", ast.Invert: "~"}
_ALIASES = {"fabs": "abs", "minimum": "min", "maximum": "max", "power": "pow", "arctan2": "atan2"}


class _ExprConverter:
    """Python AST of one computation string → IR expression."""

    def __init__(self, ctx: _Context, where: str) -> None:
        self.ctx = ctx
        self.where = where
        self.temps: set[str] = set()

    def fail(self, node: ast.AST, message: str) -> StencilmapError:
        col = getattr(node, "col_offset", None)
        at = f" (column {col + 1})" if col is not None else ""
        return StencilmapError(message + at, Location(self.ctx.filename, json_path=self.where))

    def convert(self, node: ast.expr) -> Expr:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool | int | float):
            v = node.value
            if isinstance(v, int) and not -(2**63) <= v < 2**63:
                raise self.fail(node, "integer literal does not fit in int64")
            kind = (
                dt.WEAK_BOOL if isinstance(v, bool) else dt.WEAK_INT if isinstance(v, int) else dt.WEAK_FLOAT
            )
            return Const(v, kind)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return Binary(_BINOPS[type(node.op)], self.convert(node.left), self.convert(node.right))
        if isinstance(node, ast.UnaryOp):
            return Unary(_UNOPS[type(node.op)], self.convert(node.operand))
        if isinstance(node, ast.BoolOp):
            op = "&&" if isinstance(node.op, ast.And) else "||"
            result = self.convert(node.values[0])
            for value in node.values[1:]:
                result = Binary(op, result, self.convert(value))
            return result
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.IfExp):
            return Select(self.convert(node.test), self.convert(node.body), self.convert(node.orelse))
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Name):
            return self._name(node)
        raise self.fail(node, f"unsupported expression '{ast.unparse(node)}'")

    def _compare(self, node: ast.Compare) -> Expr:
        parts: list[Expr] = []
        left = self.convert(node.left)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            if type(op) not in _CMPOPS:
                raise self.fail(node, f"unsupported comparison '{ast.unparse(node)}'")
            right = self.convert(comp)
            parts.append(Binary(_CMPOPS[type(op)], left, right))
            left = right
        out = parts[0]
        for p in parts[1:]:
            out = Binary("&&", out, p)
        return out

    def _call(self, node: ast.Call) -> Expr:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("math", "np")
        ):
            fname = func.attr
        elif isinstance(func, ast.Name):
            fname = func.id
        else:
            raise self.fail(node, f"unsupported call '{ast.unparse(node)}'")
        if node.keywords:
            raise self.fail(node, "keyword arguments are not supported")
        args = tuple(self.convert(a) for a in node.args)
        cast_to = dt.parse_dtype(fname) if fname not in ("float", "double", "half") else None
        if cast_to is not None:
            if len(args) != 1:
                raise self.fail(node, f"a cast to {fname} takes one argument")
            return Cast(cast_to, args[0])
        fname = _ALIASES.get(fname, fname)
        if fname not in FUNCTIONS:
            raise self.fail(node, f"unknown function '{fname}'")
        return Call(fname, args)

    def _name(self, node: ast.Name) -> Expr:
        name = node.id
        if name in self.temps or name in self.ctx.constants:
            return Var(name)
        axes = self.ctx.field_axes(name)
        if axes == ():
            return Ref(name, ())
        if axes is not None:
            raise self.fail(node, f"field '{name}' is used without an index")
        if name in self.ctx.axes:
            raise self.fail(node, f"index '{name}' can only be used inside a field access")
        raise self.fail(node, f"undefined name '{name}'")

    def _subscript(self, node: ast.Subscript) -> Expr:
        if not isinstance(node.value, ast.Name):
            raise self.fail(node, f"unsupported access '{ast.unparse(node)}'")
        name = node.value.id
        axes = self.ctx.field_axes(name)
        if axes is None:
            raise self.fail(node, f"undefined field '{name}'")
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        want = [self.ctx.axes[a] for a in axes]
        if len(index) != len(want):
            raise self.fail(
                node, f"field '{name}' spans [{', '.join(want)}] but is indexed with {len(index)} index(es)"
            )
        offsets = [self._index(ix, axis, name) for ix, axis in zip(index, want, strict=True)]
        return Ref(name, tuple(offsets))

    def _index(self, node: ast.expr, axis: str, field_name: str) -> int:
        if isinstance(node, ast.Name) and node.id == axis:
            return 0
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add | ast.Sub)
            and isinstance(node.left, ast.Name)
            and node.left.id == axis
        ):
            k = _int_constant(node.right)
            if k is not None:
                return k if isinstance(node.op, ast.Add) else -k
        raise self.fail(node, f"index of '{field_name}' must be '{axis}', '{axis}+c' or '{axis}-c'")


def _int_constant(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _int_constant(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None
