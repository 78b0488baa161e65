"""Code-generation tests: one cache of compiled executables per session (each design compiles once)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FULL = os.environ.get("STENCILMAP_CODEGEN_FULL") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "codegen_full: the whole corpus under every (arch, target) pair; run with STENCILMAP_CODEGEN_FULL=1",
    )


@pytest.fixture(scope="session")
def csim_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("csim-cache")
