"""The host targets: the code the cpu and gpu backends run, generated from the program alone (no hardware
design; ``registry.program_design`` stands in for one).

* ``c-openmp`` — ``kernel.c``, the cpu backend's C with OpenMP and temporal blocking (``backends/cgen.py``);
  ``--verify`` has the cpu backend compile and run exactly that text.
* ``cuda`` — ``kernel.cu``, the gpu backend's CUDA kernels (``backends/gpu.py``); ``--verify`` runs them with
  CuPy where a GPU exists, and otherwise says "not run: no GPU".

Around each kernel file the target writes a host program that runs it on raw data files, a Makefile and a
README (``host_c``, ``host_cuda``): the folder builds and runs as it is.

Both generators are ``backends``' (the code the backends run is the code written; their expressions print
through ``scalar``); codegen names them as targets. ``backends`` sits in the layer of ``design``, below
``codegen`` (``tests/test_layers.py``), as the hardware designs do.
"""

from __future__ import annotations

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


@register(
    "c-openmp", (HOST,), "the cpu backend's C with OpenMP (kernel.c); --verify: the cpu backend runs it"
)
def emit_c_openmp(design: Design, program: Program, values: Values) -> Generated:
    """``kernel.c`` and, around it, ``main.c`` (runs it on raw data files), ``Makefile`` and ``README.md``
    (``codegen.host_c``)."""
    from stencilmap.backends.plan import make_plan
    from stencilmap.codegen import host_c

    kernel = host_source(program, "cpu")  # refuses what the cpu backend cannot run, in one line
    plan = make_plan(program)
    files = (
        ("Makefile", host_c.makefile(program.name)),
        ("README.md", host_c.readme(plan, program.name)),
        ("kernel.c", kernel),
        ("main.c", host_c.main_c(plan, program.name)),
    )
    return Generated("c-openmp", files, "sm_block", (), "cpu", ("kernel.c",), ())


@register("cuda", (HOST,), "the gpu backend's CUDA (kernel.cu); --verify: CuPy on a GPU, else not run")
def emit_cuda(design: Design, program: Program, values: Values) -> Generated:
    """``kernel.cu`` and, around it, ``main.cu`` (runs it on raw data files), ``Makefile`` and ``README.md``
    (``codegen.host_cuda``)."""
    from stencilmap.backends.plan import make_plan
    from stencilmap.codegen import host_cuda

    kernel = host_source(program, "gpu")  # refuses what the gpu backend cannot run, in one line
    plan = make_plan(program)
    files = (
        ("Makefile", host_cuda.makefile(program.name)),
        ("README.md", host_cuda.readme(plan, program.name)),
        ("kernel.cu", kernel),
        ("main.cu", host_cuda.main_cu(plan, program.name)),
    )
    return Generated("cuda", files, "st_0", (), "gpu", ("kernel.cu",), ())
