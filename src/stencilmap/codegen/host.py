"""The host targets: the code the cpu and gpu backends run, generated from the program alone (no hardware
design; ``registry.program_design`` stands in for one).

* ``c-openmp`` — ``kernel.c``, the cpu backend's C with OpenMP and temporal blocking (``backends/cgen.py``);
  ``--verify`` has the cpu backend compile and run exactly that text.
* ``cuda`` — ``kernel.cu``, the gpu backend's CUDA kernels (``backends/gpu.py``); ``--verify`` runs them with
  CuPy where a GPU exists; otherwise NVRTC compiles them for sm_90 (``backends.nvrtc``) and it says
  "not run: no GPU" with each kernel's registers.

Around each kernel file the target writes a host program that runs it on raw data files, a Makefile and a
README (``host_c``, ``host_cuda``): the folder builds and runs as it is.

Both generators are ``backends``' (the code the backends run is the code written; their expressions print
through ``scalar``); codegen names them as targets. ``backends`` sits in the layer of ``design``, below
``codegen`` (``tests/test_layers.py``), as the hardware designs do.
"""

from __future__ import annotations

from typing import Literal

from stencilmap.codegen.registry import HOST, Generated, Values, register
from stencilmap.design.ir import Design
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program


def host_source(program: Program, backend: str) -> str:
    """The C (``backend`` "cpu") or CUDA ("gpu") text the host backend runs for ``program``."""
    from stencilmap.backends.cexpr import Unsupported
    from stencilmap.backends.plan import make_plan

    try:
        plan = make_plan(program)
    except Unsupported as exc:
        raise StencilmapError(f"the {backend} backend cannot run this program: {exc}") from None
    if backend == "gpu":
        from stencilmap.backends.gpu import cuda_source

        return cuda_source(plan)
    from stencilmap.backends.cgen import generate

    return generate(plan)


def _host_folder(target: str, program: Program, backend: Literal["cpu", "gpu"], entry: str) -> Generated:
    """A backend's kernel and, around it, the host program that runs it on raw data files, its ``Makefile``
    and ``README.md`` (``codegen.host_c`` for the cpu backend's C, ``codegen.host_cuda`` for the gpu's CUDA)."""
    from stencilmap.backends.plan import make_plan
    from stencilmap.codegen import host_c, host_cuda

    if backend == "cpu":
        ext, makefile, readme, main = "c", host_c.makefile, host_c.readme, host_c.main_c
    else:
        ext, makefile, readme, main = "cu", host_cuda.makefile, host_cuda.readme, host_cuda.main_cu
    kernel = host_source(program, backend)  # refuses what the backend cannot run, in one line
    plan = make_plan(program)
    files = (
        ("Makefile", makefile(program.name)),
        ("README.md", readme(plan, program.name)),
        (f"kernel.{ext}", kernel),
        (f"main.{ext}", main(plan, program.name)),
    )
    return Generated(target, files, entry, (), backend, (f"kernel.{ext}",), ())


@register(
    "c-openmp", (HOST,), "the cpu backend's C with OpenMP (kernel.c); --verify: the cpu backend runs it"
)
def emit_c_openmp(design: Design, program: Program, values: Values) -> Generated:
    """``kernel.c`` and, around it, ``main.c`` (runs it on raw data files), ``Makefile`` and ``README.md``."""
    return _host_folder("c-openmp", program, "cpu", "sm_block")


@register(
    "cuda", (HOST,), "the gpu backend's CUDA (kernel.cu); --verify: CuPy on a GPU, else NVRTC compiles it"
)
def emit_cuda(design: Design, program: Program, values: Values) -> Generated:
    """``kernel.cu`` and, around it, ``main.cu`` (runs it on raw data files), ``Makefile`` and ``README.md``."""
    return _host_folder("cuda", program, "gpu", "st_0")
