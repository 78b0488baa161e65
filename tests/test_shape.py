"""The shape issue 20 left the source in, read from every module with ``ast`` so that it stays true: no
function over 120 lines, one module that starts processes (``native``: it runs the C/C++ compiler and
every built program), architectures chosen through the ``arch`` registry rather than by testing their
names, and calls formatted by ruff (at most 20 ``# fmt: skip`` in ``src/``; none today).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from stencilmap.arch import ARCHS

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "stencilmap"

#: Longest function (lines from ``def`` to its last line, decorators aside).
MAX_FUNCTION_LINES = 120
#: Name tests left of an architecture (``design.arch == "stencilflow"``, ``"cgra" not in device.archs``).
MAX_ARCH_STRING_TESTS = 5
MAX_FMT_SKIP = 20
#: Starting a process: these modules, or ``os`` functions that run a command.
PROCESS_MODULES = frozenset({"subprocess", "pty", "multiprocessing"})
PROCESS_CALLS = frozenset(
    {
        "system",
        "popen",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "execl",
        "execlp",
        "spawnv",
        "spawnvp",
        "posix_spawn",
        "posix_spawnp",
        "fork",
        "forkpty",
    }
)


@cache
def trees() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(PACKAGE)): ast.parse(p.read_text(encoding="utf-8"), str(p))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def _strings(node: ast.expr) -> set[str] | None:
    """The string constants of a constant or a tuple/list/set of them, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out: set[str] = set()
        for e in node.elts:
            found = _strings(e)
            if found is None:
                return None
            out |= found
        return out
    return None


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def arch_string_tests(modules: dict[str, ast.Module]) -> list[str]:
    """Comparisons of something named ``*arch*`` with architecture names."""
    found = []
    for where, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and _tests_an_arch_name(node):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def _tests_an_arch_name(node: ast.Compare) -> bool:
    sides = [node.left, *node.comparators]
    for a in sides:
        if "arch" in _name(a).lower():
            for b in sides:
                names = _strings(b) if b is not a else None
                if names and names <= set(ARCHS):
                    return True
    return False


def _is_os_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
        and node.attr in PROCESS_CALLS
    )


def process_starts(modules: dict[str, ast.Module]) -> list[tuple[str, str]]:
    """(module, what) for every import of a process module and every ``os`` call that runs a command."""
    found = []
    for where, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(where, a.name) for a in node.names if a.name.split(".")[0] in PROCESS_MODULES]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                module = node.module or ""
                if module.split(".")[0] in PROCESS_MODULES:
                    found.append((where, module))
                elif module == "os":
                    found += [(where, f"os.{a.name}") for a in node.names if a.name in PROCESS_CALLS]
            elif _is_os_call(node):
                assert isinstance(node, ast.Attribute)
                found.append((where, f"os.{node.attr}"))
    return found


def test_no_function_over_120_lines() -> None:
    long = [
        f"{where}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for where, tree in trees().items()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, "functions over 120 lines:\n" + "\n".join(long)


def test_only_native_starts_processes() -> None:
    """``native`` runs the C/C++ compiler (cached builds) and every program it built or found (``native.run``)."""
    starts = process_starts(trees())
    assert {where for where, _ in starts} == {"native.py"}, starts


def test_the_process_test_finds_starts() -> None:
    code = "import subprocess\nfrom os import system\nimport os\nos.popen('x')\nos.path.join('a')\n"
    found = process_starts({"m.py": ast.parse(code)})
    assert [w for _, w in found] == ["subprocess", "os.system", "os.popen"]


def test_at_most_five_architecture_name_tests() -> None:
    found = arch_string_tests(trees())
    assert len(found) <= MAX_ARCH_STRING_TESTS, "\n".join(found)


def test_the_arch_test_finds_name_tests() -> None:
    """A test of the test: the patterns it counts, and what it leaves (a program format)."""
    code = (
        'a = design.arch == "cgra"\nb = arch in ("soda", "pcm")\nc = "emax" not in d.archs\n'
        'e = p.format == "soda"\nf = arch == "vivado"\n'
    )
    found = arch_string_tests({"m.py": ast.parse(code)})
    assert [f.split(":")[1] for f in found] == ["1", "2", "3"]


def test_no_fmt_skip_hides_a_call() -> None:
    count = sum(p.read_text(encoding="utf-8").count("# fmt: skip") for p in PACKAGE.rglob("*.py"))
    assert count <= MAX_FMT_SKIP
