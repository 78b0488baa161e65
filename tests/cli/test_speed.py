"""The command line answers `--help` at once: importing it loads no job, no front end and no heavy library
(checked by what a fresh interpreter has imported, not by timing), and the constants the CLI keeps to stay
light agree with the modules they stand for."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "matplotlib", "networkx", "pydantic", "lark", "dask", "distributed", "scipy",
    "stencilmap.program", "stencilmap.analysis", "stencilmap.design", "stencilmap.sim", "stencilmap.model",
    "stencilmap.explore", "stencilmap.jobs", "stencilmap.backends",
)  # fmt: skip


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m in HEAVY or any(m.startswith(h + ".") for h in HEAVY)}


def _imported(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return set(out.split())


def test_the_cli_imports_no_job_at_startup() -> None:
    loaded = _imported("import stencilmap.cli")
    assert not _heavy(loaded)


def test_import_stencilmap_is_light_and_run_is_the_api() -> None:
    loaded = _imported("import stencilmap")
    assert not _heavy(loaded)
    code = (
        "import stencilmap as sm\nimport stencilmap.jobs.run\n"
        "r = sm.run('examples/jacobi2d.soda')\nassert callable(sm.run) and 'w' in r.outputs"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_cli_constants_agree_with_the_library() -> None:
    from stencilmap.backends.registry import BACKENDS
    from stencilmap.cli import explore as explore_cli
    from stencilmap.cli import run as run_cli
    from stencilmap.design.common import MAX_STAGES
    from stencilmap.explore.space import ARCHS

    assert tuple(run_cli.BACKENDS) == tuple(BACKENDS)
    assert tuple(explore_cli.ARCHS) == tuple(ARCHS)
    assert explore_cli.MAX_STAGES == MAX_STAGES
