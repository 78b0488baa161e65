"""Python front end (``.py`` → Program IR): the file is read with ``ast.parse`` and never executed.

A module-level function is a stencil: its name is the field it defines, its parameters the fields it reads
(``v[-1, 0]`` is an offset in array-index order, the first index the slowest axis, as NumPy), its return
annotation the dtype, a local assignment a temporary, and a parameter's default the boundary condition of
that field (``= constant(0.0)``, ``= copy``, ``= shrink``; none: SODA's implicit shrink). Module-level
settings: ``shape``, ``iterate``, ``border``, ``outputs`` (default: the functions no other function reads),
``feedback`` (``{"output": "input"}``), ``semantics`` (``"numpy"``, the default, or ``"c"``), the hints
``unroll``, ``vectorization``, ``burst_width``, ``tile``, ``cluster``, and ``dram`` (``{"name": bank(s)}``).
Declarations: ``a: float32`` or ``a: float32 = Input(axes=(1,), data="a.dat")`` an input (undeclared
inputs come from the parameters: dtype from the annotation, every axis, or none when read bare),
``c: float32 = Param(3, 3)`` a param, ``alpha = 0.5`` / ``alpha: float32 = 0.5`` a constant.
Any other statement is an error naming ``file:line:col``.

The program takes the format of its semantics (``"c"``: ``soda``, ``"numpy"``: ``stencilflow``), so every
later stage treats it as that format's programs. The printer is ``program.python_print``.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import MAX_DEPTH
from stencilmap.program.ir import Constant, DataSource, Hints, Input, Param, Program, Stencil
from stencilmap.program.python_expr import (
    SETTINGS,
    dtype_of,
    escape,
    lang_name,
    literal_dtype,
    signed_number,
    unescape,
    where,
)
from stencilmap.program.python_stencil import StencilDef, read_function, reads, statement_name, to_stencil
from stencilmap.program.stencilflow_expr import TOO_DEEP, ast_depth

#: What a ``.py`` program may import (only for an IDE's sake: nothing is imported).
_IMPORTS = {"stencilmap.lang", "math", "numpy", "__future__"}


def load_python(path: str | Path) -> Program:
    """Parse a ``.py`` stencil program (not yet verified)."""
    from stencilmap.program.load import read_program_text

    p = Path(path)
    return parse_python(read_program_text(p), str(p))


def parse_python(text: str, filename: str = "<string>", name: str | None = None) -> Program:
    """Parse Python program text into a Program (not yet verified); ``name`` defaults to the file's stem."""
    module = _parse(text, filename)
    return _Reader(filename).read(module.body, name or Path(filename).stem or "program")


def parse_functions(
    functions: Callable[..., Any] | Sequence[Callable[..., Any]], shape: tuple[int, ...] | None = None
) -> Program:
    """A Program from Python function objects, each read from its source (``inspect.getsource``) by the same
    parser; never called. The program is named after the last function; ``shape`` sets its rank."""
    fns = [functions] if callable(functions) else list(functions)
    if not fns:
        raise StencilmapError("no functions given")
    body: list[ast.stmt] = []
    files: dict[int, str] = {}
    for fn in fns:
        filename, stmt = _function_ast(fn)
        files[id(stmt)] = filename
        body.append(stmt)
    reader = _Reader(files[id(body[0])], files)
    if shape is not None:
        reader.shape = tuple(shape)
    return reader.read(body, getattr(fns[-1], "__name__", "program"))


def _function_ast(fn: Callable[..., Any]) -> tuple[str, ast.stmt]:
    """The ``def`` of a function object, with its real file, lines and columns."""
    if not inspect.isfunction(fn):
        raise StencilmapError(f"{fn!r} is not a Python function (def)")
    if fn.__name__ == "<lambda>":
        raise StencilmapError("a lambda cannot be a stencil: write it with def")
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as exc:
        raise StencilmapError(f"cannot read the source of '{fn.__name__}': {exc}") from None
    text = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    module = _parse(textwrap.dedent(text), filename)
    for node in ast.walk(module):
        if isinstance(node, ast.stmt | ast.expr | ast.arg | ast.keyword):
            node.lineno += first - 1
            node.col_offset += indent
    if len(module.body) != 1:
        raise StencilmapError(f"cannot read the source of '{fn.__name__}'", filename)
    return filename, module.body[0]


def _parse(text: str, filename: str) -> ast.Module:
    try:
        with warnings.catch_warnings():  # Python's SyntaxWarnings would print a second line
            warnings.simplefilter("ignore")
            module = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        at = f"{filename}:{exc.lineno}:{exc.offset}" if exc.lineno is not None else filename
        raise StencilmapError(f"syntax error: {exc.msg}", at) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        what = "source holds a null byte" if isinstance(exc, ValueError) else TOO_DEEP
        raise StencilmapError(what, filename) from None
    if ast_depth(module) > MAX_DEPTH + 8:  # module → function → return → expression
        raise StencilmapError(TOO_DEEP, filename)
    return module


@dataclass
class _InputDecl:
    dtype: str
    axes: tuple[int, ...] | None
    source: DataSource | None
    node: ast.stmt


@dataclass
class _Reader:
    """Reads a module's statements once, then builds the Program."""

    filename: str
    files: dict[int, str] = field(default_factory=dict)  # statement id → file (functions from several files)
    settings: dict[str, ast.stmt] = field(default_factory=dict)
    inputs: dict[str, _InputDecl] = field(default_factory=dict)
    params: dict[str, Param] = field(default_factory=dict)
    constants: dict[str, tuple[ast.expr, str | None, ast.stmt]] = field(default_factory=dict)
    functions: list[StencilDef] = field(default_factory=list)
    defined: dict[str, ast.AST] = field(default_factory=dict)
    shape: tuple[int | None, ...] | None = None

    def fail(self, message: str, node: ast.AST) -> StencilmapError:
        return StencilmapError(message, where(self.filename, node))

    def read(self, body: list[ast.stmt], name: str) -> Program:
        for stmt in body:
            self._statement(stmt)
        semantics = self._semantics()
        if "shape" in self.settings:
            self.shape = self._shape(self._value("shape"))
        for fn in self.functions:
            fn.check_params(self.params, self.constants)
        inputs = self._inputs()
        rank = self._rank(inputs)
        full = {**{i.name: i.axes for i in inputs}, **{f.name: tuple(range(rank)) for f in self.functions}}
        constants = tuple(self._constant(n, semantics) for n in self.constants)
        params = {p.name: len(p.shape) for p in self.params.values()}
        names = {c.name for c in constants}
        stencils = [to_stencil(fn, semantics, full, names, params) for fn in self.functions]
        self._check_annotations(inputs, stencils)
        banks = self._banks()
        return Program(
            name=name,
            format="soda" if semantics == "c" else "stencilflow",
            semantics=semantics,
            shape=self.shape if self.shape is not None else (None,) * rank,
            inputs=tuple(_with_banks(i, banks) for i in inputs),
            stencils=tuple(_with_banks(s, banks) for s in stencils),
            outputs=self._outputs(),
            params=tuple(_with_banks(p, banks) for p in self.params.values()),
            constants=constants,
            iterate=self._positive("iterate", 1),
            border=self._choice("border", ("ignore", "preserve"), "ignore"),  # type: ignore[arg-type]
            hints=self._hints(),
            feedback=self._feedback(),
            path=self.filename,
            feedback_loc=where(self.filename, self.settings["feedback"])
            if "feedback" in self.settings
            else None,
            locs=tuple((key, where(self.filename, stmt)) for key, stmt in self.settings.items()),
        )

    # ------------------------------------------------------------------------------------- statements

    def _statement(self, stmt: ast.stmt) -> None:
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            return  # a docstring
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            self._import(stmt)
        elif isinstance(stmt, ast.FunctionDef):
            fn = read_function(stmt, self.files.get(id(stmt), self.filename))
            self._define(fn.name, stmt)
            self.functions.append(fn)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            self._assignment(stmt)
        else:
            raise self.fail(
                f"{statement_name(stmt)} is not allowed in a stencil program: it holds imports, "
                "settings, declarations and stencil functions (the file is read, never run)",
                stmt,
            )

    def _import(self, stmt: ast.Import | ast.ImportFrom) -> None:
        modules = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [stmt.module or "."]
        for m in modules:
            if m not in _IMPORTS:
                raise self.fail(
                    f"import of '{m}': a stencil program imports only stencilmap.lang (and math, "
                    "numpy); nothing is imported, the file is read, never run",
                    stmt,
                )

    def _define(self, name: str, node: ast.AST) -> None:
        if name in self.defined:
            first = self.defined[name]
            raise self.fail(
                f"'{escape(name)}' is defined twice (first on line {getattr(first, 'lineno', '?')})", node
            )
        self.defined[name] = node

    def _assignment(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            raise self.fail("a module-level assignment sets one name: name = value", stmt)
        spelt = targets[0].id
        if spelt in SETTINGS:
            if stmt.value is None:
                raise self.fail(f"setting '{spelt}' needs a value", stmt)
            if spelt in self.settings:
                raise self.fail(f"'{spelt}' is set twice", stmt)
            self.settings[spelt] = stmt
            return
        name = unescape(spelt)
        self._define(name, stmt)
        value = stmt.value
        if isinstance(stmt, ast.Assign):
            assert value is not None
            self._check_constant(spelt, value, stmt)
            self.constants[name] = (value, None, stmt)
            return
        dtype = dtype_of(stmt.annotation, self.filename, f"'{spelt}'")
        marker = _marker(value)
        if value is None or marker == "Input":
            self.inputs[name] = self._input_decl(dtype, value, stmt)
        elif marker == "Param":
            self.params[name] = self._param(name, dtype, value, stmt)
        else:
            self._check_constant(spelt, value, stmt)
            self.constants[name] = (value, dtype, stmt)

    def _check_constant(self, spelt: str, value: ast.expr, stmt: ast.stmt) -> None:
        number = signed_number(value)
        if number is None or isinstance(number, bool):
            raise self.fail(
                f"constant '{spelt}' must be a number (a module-level name = value is a "
                "constant; settings are " + ", ".join(SETTINGS) + ")",
                stmt,
            )

    def _input_decl(self, dtype: str, call: ast.expr | None, stmt: ast.stmt) -> _InputDecl:
        axes: tuple[int, ...] | None = None
        source: DataSource | None = None
        if isinstance(call, ast.Call):
            if call.args:
                raise self.fail("Input takes keywords: Input(axes=(0, 1), data=...)", call)
            for kw in call.keywords:
                if kw.arg == "axes":
                    axes = self._ints(kw.value, "axes")
                elif kw.arg == "data":
                    source = self._source(kw.value)
                else:
                    raise self.fail(f"Input takes axes= and data=, not {kw.arg or '**'}=", kw.value)
        return _InputDecl(dtype, axes, source, stmt)

    def _param(self, name: str, dtype: str, call: ast.expr, stmt: ast.stmt) -> Param:
        assert isinstance(call, ast.Call)
        if call.keywords:
            raise self.fail("Param takes its sizes: Param(3, 3)", call)
        sizes = tuple(self._int(a, "a param size") for a in call.args)
        return Param(name, dtype, sizes, loc=where(self.filename, stmt))

    def _source(self, node: ast.expr) -> DataSource:
        """``"a.dat"``, ``constant(v)``, ``random(lo, hi)``, a number (a scalar), a list (inline values)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if Path(node.value).suffix.lower() not in (".dat", ".csv"):
                raise self.fail(f"data file {node.value!r} must be a .dat or .csv file", node)
            return DataSource("file", path=node.value)
        number = signed_number(node)
        if number is not None and not isinstance(number, bool):
            return DataSource("scalar", value=float(number))
        if isinstance(node, ast.List | ast.Tuple):
            return DataSource("inline", values=tuple(self._numbers(node)))
        kind = _marker(node)
        if isinstance(node, ast.Call) and kind == "constant" and len(node.args) == 1 and not node.keywords:
            return DataSource("constant", value=self._float(node.args[0], "a constant value"))
        if isinstance(node, ast.Call) and kind == "random" and len(node.args) == 2 and not node.keywords:
            low, high = (self._float(a, "a random bound") for a in node.args)
            if not low < high:
                raise self.fail(f"random range {low}..{high} is empty", node)
            return DataSource("random", low=low, high=high)
        raise self.fail("data is a .dat/.csv path, constant(v), random(lo, hi), a number or a list", node)

    def _numbers(self, node: ast.expr) -> list[float]:
        if isinstance(node, ast.List | ast.Tuple):
            return [x for e in node.elts for x in self._numbers(e)]
        return [self._float(node, "inline data")]

    # ---------------------------------------------------------------------------------------- values

    def _value(self, key: str) -> ast.expr:
        value = self.settings[key].value  # type: ignore[attr-defined]
        assert isinstance(value, ast.expr)
        return value

    def _int(self, node: ast.expr, what: str) -> int:
        value = signed_number(node)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"{what} must be an integer, got '{ast.unparse(node)}'", node)
        return value

    def _float(self, node: ast.expr, what: str) -> float:
        value = signed_number(node)
        if value is None or isinstance(value, bool):
            raise self.fail(f"{what} must be a number, got '{ast.unparse(node)}'", node)
        return float(value)

    def _ints(self, node: ast.expr, what: str) -> tuple[int, ...]:
        if not isinstance(node, ast.Tuple | ast.List):
            raise self.fail(f"{what} is a tuple of integers, e.g. (0, 1)", node)
        return tuple(self._int(e, what) for e in node.elts)

    def _string(self, node: ast.expr, what: str) -> str:
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            raise self.fail(f"{what} must be a string, got '{ast.unparse(node)}'", node)
        return node.value

    def _name(self, node: ast.expr, what: str) -> str:
        """A name written as a string (``"w"``), as an identifier spells it (``"in_"`` is ``in``)."""
        text = self._string(node, what)
        if not text.isidentifier():
            raise self.fail(f"{what}: {text!r} is not a name", node)
        return unescape(text)

    def _names(self, node: ast.expr, what: str) -> list[tuple[str, ast.expr]]:
        if not isinstance(node, ast.Tuple | ast.List):
            raise self.fail(f'{what} is a list of names, e.g. ["w"]', node)
        return [(self._name(e, what), e) for e in node.elts]

    def _dict(self, node: ast.expr, what: str) -> list[tuple[str, ast.expr]]:
        if not isinstance(node, ast.Dict) or any(k is None for k in node.keys):
            raise self.fail(f'{what} is a dict: {{"name": ...}}', node)
        return [(self._name(k, what), v) for k, v in zip(node.keys, node.values, strict=True) if k]

    def _positive(self, key: str, default: int) -> int:
        if key not in self.settings:
            return default
        value = self._int(self._value(key), key)
        if value < 1:
            raise self.fail(f"{key} must be a positive integer, got {value}", self._value(key))
        return value

    def _choice(self, key: str, choices: tuple[str, ...], default: str | None) -> str | None:
        if key not in self.settings:
            return default
        value = self._string(self._value(key), key)
        if value not in choices:
            raise self.fail(f"{key} must be one of {', '.join(choices)}, got {value!r}", self._value(key))
        return value

    # ----------------------------------------------------------------------------------------- settings

    def _semantics(self) -> dt.Semantics:
        return "c" if self._choice("semantics", ("numpy", "c"), "numpy") == "c" else "numpy"

    def _shape(self, node: ast.expr) -> tuple[int | None, ...]:
        if not isinstance(node, ast.Tuple | ast.List) or not node.elts:
            raise self.fail("shape is a tuple of sizes, e.g. (64, 64); None: given at run time", node)
        return tuple(
            None if isinstance(e, ast.Constant) and e.value is None else self._int(e, "a size")
            for e in node.elts
        )

    def _hints(self) -> Hints:
        tile: tuple[int, ...] | None = None
        if "tile" in self.settings:
            value = self._value("tile")
            is_none = isinstance(value, ast.Constant) and value.value is None
            tile = None if is_none else self._ints(value, "tile")
        burst = self._positive("burst_width", 0)
        return Hints(
            unroll=self._positive("unroll", 1),
            burst_width=burst or None,
            vectorization=self._positive("vectorization", 1),
            tile=tile,
            cluster=self._choice("cluster", ("none", "fine", "coarse", "full"), None),
        )

    def _outputs(self) -> tuple[str, ...]:
        names = [f.name for f in self.functions]
        if "outputs" in self.settings:
            listed = self._names(self._value("outputs"), "outputs")
            for name, node in listed:
                if name not in names:
                    raise self.fail(f"output '{name}' is not a stencil function", node)
            return tuple(n for n, _ in listed)
        read = {r for f in self.functions for r in f.params if r != f.name}
        return tuple(n for n in names if n not in read)

    def _feedback(self) -> tuple[tuple[str, str], ...]:
        if "feedback" not in self.settings:
            return ()
        pairs = self._dict(self._value("feedback"), "feedback")
        return tuple((out, self._name(inp, "feedback")) for out, inp in pairs)

    def _banks(self) -> dict[str, tuple[int, ...]]:
        if "dram" not in self.settings:
            return {}
        banks: dict[str, tuple[int, ...]] = {}
        for name, node in self._dict(self._value("dram"), "dram"):
            if name not in self.defined and name not in {n for f in self.functions for n in f.params}:
                raise self.fail(f"dram: '{name}' is not an input, param or stencil", node)
            one = isinstance(node, ast.Constant)
            banks[name] = (self._int(node, "a DRAM bank"),) if one else self._ints(node, "DRAM banks")
        return banks

    # --------------------------------------------------------------------------------------- program

    def _inputs(self) -> list[Input]:
        """Declared inputs in their order, then the other fields functions read, by first appearance."""
        stencils = {f.name for f in self.functions}
        inputs = [
            Input(n, d.dtype, d.axes or (), d.source, loc=where(self.filename, d.node))
            for n, d in self.inputs.items()
        ]
        known = set(self.inputs) | stencils
        for fn in self.functions:
            for name, param in fn.params.items():
                if name in known:
                    continue
                known.add(name)
                dtypes = {
                    p.dtype for f in self.functions for n, p in f.params.items() if n == name and p.dtype
                }
                if len(dtypes) != 1:
                    what = "no dtype: annotate it" if not dtypes else f"dtypes {', '.join(sorted(dtypes))}"
                    raise self.fail(
                        f"input '{escape(name)}' is given {what} (e.g. {escape(name)}: float32)", param.node
                    )
                inputs.append(Input(name, dtypes.pop(), (), None, loc=where(fn.filename, param.node)))
        return inputs

    def _rank(self, inputs: list[Input]) -> int:
        """The rank: ``shape``'s, else the offsets of a full-rank field read; inputs without declared axes
        span every axis, or none when they are only read bare."""
        counts = {f.name: reads(f) for f in self.functions}
        full = {f.name for f in self.functions} | {n for n, d in self.inputs.items() if d.axes is None}
        full |= {i.name for i in inputs if i.name not in self.inputs}
        rank = len(self.shape) if self.shape is not None else None
        for fn in self.functions:
            for name, n in counts[fn.name]:
                if name in full and n > 0 and rank is None:
                    rank = n
        if rank is None:
            raise StencilmapError("cannot tell the number of dimensions: set shape = (...)", self.filename)
        for k, inp in enumerate(inputs):
            declared = self.inputs.get(inp.name)
            if declared is not None and declared.axes is not None:
                continue
            bare = declared is None and all(
                n == 0 for f in self.functions for name, n in counts[f.name] if name == inp.name
            )
            inputs[k] = Input(
                inp.name, inp.dtype, () if bare else tuple(range(rank)), inp.source, loc=inp.loc
            )
        return rank

    def _constant(self, name: str, semantics: dt.Semantics) -> Constant:
        node, dtype, _ = self.constants[name]
        value = signed_number(node)
        assert value is not None and not isinstance(value, bool)
        kind = dtype or literal_dtype(value, semantics)
        assert kind is not None
        return Constant(name, float(value) if dtype is not None and dt.is_float(dtype) else value, kind)

    def _check_annotations(self, inputs: list[Input], stencils: list[Stencil]) -> None:
        dtypes = {i.name: i.dtype for i in inputs} | {s.name: s.dtype for s in stencils}
        for fn in self.functions:
            for name, param in fn.params.items():
                if param.dtype is not None and name in dtypes and param.dtype != dtypes[name]:
                    raise StencilmapError(
                        f"'{escape(name)}' is {dtypes[name]}, annotated {param.dtype}",
                        where(fn.filename, param.node),
                    )


def _marker(node: ast.expr | None) -> str | None:
    """The stencilmap.lang name a call or name spells (``Input(...)``, ``copy``), or None."""
    if isinstance(node, ast.Call):
        node = node.func
    return lang_name(node) if node is not None else None


def _with_banks(x: Any, banks: dict[str, tuple[int, ...]]) -> Any:
    from dataclasses import replace

    return replace(x, banks=banks[x.name]) if x.name in banks else x
