"""The benchmark scripts under test: ``load("fidelity")`` imports ``benchmarks/fidelity.py`` as a module of its
own (its siblings — ``table.py``, ``gpu_bench.py`` — importable beside it, its dataclasses able to look their
module up)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.conftest import ROOT

FOLDER = ROOT / "benchmarks"


def load(name: str) -> ModuleType:
    if str(FOLDER) not in sys.path:
        sys.path.insert(0, str(FOLDER))
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", FOLDER / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
