"""The packages import one way (REDESIGN §3), read from the source of every module with ``ast``: top-level
imports, imports inside functions and ``if TYPE_CHECKING:`` imports alike.

    program → analysis → transform → scalar → (design | backends) → (sim | model | codegen) → arch
    → explore → jobs → (api | cli) → entry → __main__

``backends`` (the host executors: compiled C, CUDA, Dask) sits beside ``design`` (the hardware): both are
what runs a program, and ``codegen`` prints both (the ``c-openmp`` and ``cuda`` targets are the backends'
own kernels, so the code written is the code run).

A package may import its own modules, any package of an earlier layer, and the base: ``errors``, ``io``,
``cache`` / ``native`` (building and caching native code), ``names`` (escaping), ``lang`` (the names a
Python program imports; utilities that import only each other) and ``device`` (the catalog, a leaf that imports only the
base). Packages of one layer do not import each other. ``stencilmap`` itself (``__init__``) is the lazy
facade over ``api``; the names it defines (``__version__``) count as base. An import against the order
would be listed in ``EXCEPTIONS`` with the reason and the work that removes it; there are none.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "stencilmap"

#: The layers, lowest first; a package may import those before its own layer.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"program"}),
    frozenset({"analysis"}),
    frozenset({"transform"}),
    frozenset({"scalar"}),
    frozenset({"design", "backends"}),
    frozenset({"sim", "model", "codegen"}),
    frozenset({"arch"}),
    frozenset({"explore"}),
    frozenset({"jobs"}),
    frozenset({"api", "cli"}),
    frozenset({"entry"}),
    frozenset({"__main__", "__init__"}),
)
#: Utilities every layer may import; they import only each other.
BASE = frozenset({"errors", "io", "cache", "native", "names", "lang", "__version__"})
#: The device catalog: read by every layer, importing only the base.
LEAF = frozenset({"device", "point"})


@dataclass(frozen=True, slots=True)
class Allowed:
    importer: str  # a module, dotted
    imported: str  # a module or a package prefix, dotted
    reason: str


#: Imports that break the order today, each with why and what removes it. Keep this list short.
EXCEPTIONS: tuple[Allowed, ...] = ()


@dataclass(frozen=True, slots=True)
class Import:
    importer: str
    imported: str
    line: int

    def where(self) -> str:
        return f"{self.importer}:{self.line} imports {self.imported}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(name: str, path: Path) -> Iterator[Import]:
    """Every stencilmap import of one module, wherever it sits in the file (``ast.walk``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(node, name, path.name == "__init__.py")
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in modules():  # `from stencilmap.design import emax`: the submodule
                    yield Import(name, sub, node.lineno)
                elif module == "stencilmap":  # a name the package itself defines
                    yield Import(name, f"stencilmap.{alias.name}", node.lineno)
                else:
                    yield Import(name, module, node.lineno)


def component(module: str) -> str:
    """The top-level package or module of ``stencilmap`` a dotted name belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(comp: str) -> int:
    """Base -2, the device leaf -1, else the layer's index; unknown names fail the test."""
    if comp in BASE:
        return -2
    if comp in LEAF:
        return -1
    for i, layer in enumerate(LAYERS):
        if comp in layer:
            return i
    raise AssertionError(f"stencilmap.{comp} is in no layer: add it to LAYERS, BASE or LEAF of {__file__}")


def allowed(imp: Import) -> bool:
    a, b = component(imp.importer), component(imp.imported)
    if a == b:
        return True
    la, lb = layer_of(a), layer_of(b)
    if la == -2:
        return lb == -2
    return lb < la or (la < 0 and lb == -2)


def excepted(imp: Import) -> Allowed | None:
    for e in EXCEPTIONS:
        if imp.importer == e.importer and (
            imp.imported == e.imported or imp.imported.startswith(e.imported + ".")
        ):
            return e
    return None


@cache
def all_imports() -> tuple[Import, ...]:
    return tuple(
        imp
        for name, path in modules().items()
        for imp in imports_of(name, path)
        if imp.imported == "stencilmap" or imp.imported.startswith("stencilmap.")
    )


def test_every_module_sits_in_a_layer() -> None:
    for name in modules():
        layer_of(component(name))


def test_imports_follow_the_layer_order() -> None:
    wrong = [imp.where() for imp in all_imports() if not allowed(imp) and excepted(imp) is None]
    assert not wrong, "imports against the layer order (REDESIGN §3):\n" + "\n".join(sorted(wrong))


def test_every_exception_is_still_needed() -> None:
    """A listed exception that no import uses any more is deleted from the list."""
    used = {excepted(imp) for imp in all_imports() if not allowed(imp)}
    stale = [f"{e.importer} -> {e.imported}" for e in EXCEPTIONS if e not in used]
    assert not stale, "exceptions no longer needed: " + ", ".join(stale)


def test_design_never_calls_a_model() -> None:
    """design/ chooses nothing by a model: the caller passes the CGRA workers and the EMAX p."""
    calls = [
        imp.where() for imp in all_imports()
        if component(imp.importer) == "design" and component(imp.imported) == "model" and excepted(imp) is None
    ]  # fmt: skip
    assert not calls


def test_model_imports_nothing_from_jobs() -> None:
    calls = [
        imp.where() for imp in all_imports()
        if component(imp.importer) == "model" and component(imp.imported) == "jobs" and excepted(imp) is None
    ]  # fmt: skip
    assert not calls


def test_type_checking_and_lazy_imports_count(tmp_path: Path) -> None:
    """The walk sees imports inside functions and under ``if TYPE_CHECKING:`` (a test of the test)."""
    text = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from stencilmap.jobs.run import RunConfig\n"
        "def f() -> None:\n    from ..api import simulate\n"
    )
    path = tmp_path / "lazy.py"
    path.write_text(text, encoding="utf-8")
    found = {imp.imported for imp in imports_of("stencilmap.design.lazy", path)}
    assert found == {"typing", "stencilmap.jobs.run", "stencilmap.api"}
    assert not any(allowed(Import("stencilmap.design.lazy", m, 1)) for m in found - {"typing"})


@pytest.mark.parametrize(
    ("importer", "imported", "ok"),
    [
        ("stencilmap.design.soda", "stencilmap.analysis.halos", True),
        ("stencilmap.design.soda", "stencilmap.model.timing", False),
        ("stencilmap.sim.engine", "stencilmap.codegen.expr", False),  # one layer: no imports across it
        ("stencilmap.device.catalog", "stencilmap.errors", True),
        ("stencilmap.device.catalog", "stencilmap.program.ir", False),
        ("stencilmap.errors", "stencilmap.device", False),
        ("stencilmap.program.ir", "stencilmap.device.types", True),
        ("stencilmap.arch.cgra", "stencilmap.sim.cgra", True),
        ("stencilmap.scalar.lower", "stencilmap.design.ir", False),
        ("stencilmap.cli.codegen", "stencilmap.__version__", True),
    ],
)
def test_the_rule(importer: str, imported: str, ok: bool) -> None:
    assert allowed(Import(importer, imported, 1)) is ok
