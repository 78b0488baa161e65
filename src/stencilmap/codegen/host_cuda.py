"""The files around the ``cuda`` target's ``kernel.cu`` (issue 25): a host program that runs it on raw data
files, its Makefile, and a README — the folder builds and runs as it is, as the ``c-openmp`` one does
(``host_c``, whose file I/O, data-file table and Makefile rules this shares).

``main.cu`` does what the gpu backend's ``run_gpu`` (``backends.gpu``) does: it reads every input and param
(``IN_DIR/<name>.bin``), keeps a definedness mask beside each field that may hold undefined points (the
inputs' all ones), launches the ``st_<k>`` kernels in the plan's topological order over the whole grid
(the backend's ``launch``: 32 × 8 threads a block over the last two axes, each marching a chunk of the
outer ones) once per time step, ping-pongs each iterated output between two device buffers (the input's own
buffer is never written; the iterated input reads the last step's output), and writes each output
(``OUT_DIR/<output>.bin``, undefined points NaN or 0).

``kernel.cu`` is the backend's NVRTC text, which declares its own ``int64_t`` & co. (NVRTC has no system
headers); under nvcc those would clash with the C library's, so ``main.cu`` includes it inside a namespace
and ``make`` compiles the one file (``--fmad=false``, as the backend compiles for bit-exactness).
"""

from __future__ import annotations

from math import prod

from stencilmap.backends.cexpr import CTYPES
from stencilmap.backends.gpu import _reads, launch
from stencilmap.backends.nvrtc import NVRTC_OPTIONS
from stencilmap.backends.plan import Plan
from stencilmap.codegen.host_c import FILE_IO, RUN_RULES, file_table
from stencilmap.names import comment, identifier
from stencilmap.program import dtypes as dt

#: ``SM_LAUNCH(kernel, grid, block, args...)``: the launch, replaceable (a test's stand-in runtime
#: defines it before including ``main.cu``, having no ``<<< >>>``).
LAUNCH = (
    "#ifndef SM_LAUNCH",
    "#define SM_LAUNCH(kernel, grid, block, ...) kernel<<<(grid), (block)>>>(__VA_ARGS__)",
    "#endif",
)


DEVICE_HELPERS = (  # cudaMalloc / upload / a mask of ones, each checked
    "static void check(cudaError_t e, const char *what) {",
    '  if (e != cudaSuccess) { fprintf(stderr, "%s: %s\\n", what, cudaGetErrorString(e)); exit(1); }',
    "}",
    "",
    "static void *device(size_t bytes) {",
    "  void *p = NULL;",
    '  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");',
    "  return p;",
    "}",
    "",
    "static void *upload(const void *host, size_t bytes) {",
    "  void *p = device(bytes);",
    '  check(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");',
    "  return p;",
    "}",
    "",
    "static uint8_t *ones(size_t n) {",
    "  uint8_t *m = (uint8_t *)device(n);",
    '  check(cudaMemset(m, 1, n), "cudaMemset");',
    "  return m;",
    "}",
    "",
)


def main_cu(plan: Plan, program_name: str) -> str:
    """``main.cu``: ``<program> IN_DIR OUT_DIR``."""
    prog = plan.program
    shape = tuple(int(n or 0) for n in prog.shape)
    at = launch(shape)

    def count(name: str) -> int:
        return prod(shape[a] for a in plan.axes(name))

    def ct(name: str) -> str:
        return CTYPES[prog.field_dtype(name)]

    fed = dict((o, i) for i, o in plan.pairs) if plan.feeds else {}
    lines = [
        f"/* Host program of {comment(program_name)} (stencilmap, cuda): runs kernel.cu on raw data files.",
        " * Usage: ./stencil IN_DIR OUT_DIR; IN_DIR/<field>.bin holds each input and param in little-endian",
        " * C order; OUT_DIR/<output>.bin receives each output (undefined points NaN or 0). */",
        "#include <math.h>",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "#include <cuda_runtime.h>",
        "",
        "/* kernel.cu declares int64_t & co. itself (for NVRTC): kept in a namespace of its own. */",
        "#undef INFINITY",
        "#undef NAN",
        "namespace sm {",
        '#include "kernel.cu"',
        "}",
        "#undef INFINITY",
        "#undef NAN",
        "",
        *LAUNCH,
        "",
        *FILE_IO,
        *DEVICE_HELPERS,
        "int main(int argc, char **argv) {",
        '  if (argc != 3) { fprintf(stderr, "usage: %s IN_DIR OUT_DIR\\n", argv[0]); return 2; }',
        *[f"  const long long n{a} = {n};" for a, n in enumerate(shape)],
        f"  const long long iterate = {prog.iterate};",
        f"  const dim3 grid({', '.join(map(str, at.grid))}), block({', '.join(map(str, at.block))});",
        f"  const long long chunk = {at.chunk};",
    ]
    for name in (i.name for i in prog.inputs):  # device copies; the host copy is freed
        k, t, c = plan.index(name), ct(name), count(name)
        lines.append(f'  void *h{k} = load(argv[1], "{identifier(name)}", {c} * sizeof({t}));')
        lines.append(f"  {t} *v{k} = ({t} *)upload(h{k}, {c} * sizeof({t}));")
        lines.append(f"  free(h{k});")
        if name in plan.masked:
            lines.append(f"  uint8_t *m{k} = ones({c});")
    params = []
    for j, p in enumerate(prog.params):
        t, c = CTYPES[p.dtype], prod(p.shape)
        lines.append(f'  void *hp{j} = load(argv[1], "{identifier(p.name)}", {c} * sizeof({t}));')
        lines.append(f"  const {t} *p{j} = (const {t} *)upload(hp{j}, {c} * sizeof({t}));")
        lines.append(f"  free(hp{j});")
        params.append(f"p{j}")
    for st in plan.order:  # each stencil's buffers: two for an iterated output (ping-pong), else one
        k, t, c = plan.index(st.name), ct(st.name), count(st.name)
        masked = st.name in plan.masked
        for b in ("a", "b") if st.name in fed else ("a",):
            lines.append(f"  {t} *v{k}{b} = ({t} *)device({c} * sizeof({t}));")
            if masked:
                lines.append(f"  uint8_t *m{k}{b} = (uint8_t *)device({c});")
        lines.append(f"  {t} *v{k} = v{k}a;")
        if masked:
            lines.append(f"  uint8_t *m{k} = m{k}a;")
    lines.append("  for (long long step = 0; step < iterate; ++step) {")
    dims = [f"n{a}" for a in range(len(shape))]
    for n, st in enumerate(plan.order):
        k = plan.index(st.name)
        if st.name in fed:  # as run_gpu: step 0 a fresh buffer, step 1 another, then the spare
            lines.append(f"    v{k} = step % 2 ? v{k}b : v{k}a;")
            if st.name in plan.masked:
                lines.append(f"    m{k} = step % 2 ? m{k}b : m{k}a;")
        args = [*dims, "chunk"]
        for f in _reads(plan, st):
            args.append(f"v{plan.index(f)}")
            if f in plan.masked:
                args.append(f"m{plan.index(f)}")
        args.append(f"v{k}")
        if st.name in plan.masked:
            args.append(f"m{k}")
        args += params
        lines.append(f"    SM_LAUNCH(sm::st_{n}, grid, block, {', '.join(args)});")
        lines.append(f'    check(cudaGetLastError(), "st_{n} ({comment(st.name)})");')
    for o, i in fed.items():  # the step's output is the next step's input
        ki, ko = plan.index(i), plan.index(o)
        lines.append(f"    v{ki} = v{ko};")
        if o in plan.masked:
            lines.append(f"    m{ki} = m{ko};")
    lines.append("  }")
    lines.append('  check(cudaDeviceSynchronize(), "the kernels");')
    for o in prog.outputs:
        lines += _download(plan, o, ct(o), count(o))
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def _download(plan: Plan, o: str, t: str, c: int) -> list[str]:
    """Copy output ``o`` back, its undefined points NaN (or 0), and write ``OUT_DIR/<o>.bin``."""
    prog, k = plan.program, plan.index(o)
    lines: list[str] = []
    lines.append("  {")
    lines.append(f"    {t} *out = ({t} *)malloc({c} * sizeof({t}) + 1);")
    lines.append("    if (!out) return 3;")
    lines.append(
        f'    check(cudaMemcpy(out, v{k}, {c} * sizeof({t}), cudaMemcpyDeviceToHost), "cudaMemcpy");'
    )
    if o in plan.masked:
        undefined = f'({t})nan("")' if dt.is_float(prog.field_dtype(o)) else f"({t})0"
        lines.append(f"    uint8_t *ok = (uint8_t *)malloc({c} + 1);")
        lines.append("    if (!ok) return 3;")
        lines.append(f'    check(cudaMemcpy(ok, m{k}, {c}, cudaMemcpyDeviceToHost), "cudaMemcpy");')
        lines.append(f"    for (long long j = 0; j < {c}; ++j) if (!ok[j]) out[j] = {undefined};")
        lines.append("    free(ok);")
    lines.append(f'    save(argv[2], "{identifier(o)}", out, {c} * sizeof({t}));')
    lines.append("    free(out);")
    lines.append("  }")
    return lines


def makefile(program_name: str) -> str:
    return "\n".join(
        [
            f"# {comment(program_name)}: the gpu backend's kernels and their host program (stencilmap, cuda).",
            "# make            builds ./stencil (nvcc; --fmad=false as the gpu backend compiles kernel.cu)",
            "# make run IN=in OUT=out   runs it on IN/<field>.bin, writing OUT/<output>.bin",
            "NVCC ?= nvcc",
            f"NVCCFLAGS ?= -O3 {' '.join(NVRTC_OPTIONS)}",
            "IN ?= in",
            "OUT ?= out",
            "",
            ".PHONY: all run clean",
            "all: stencil",
            "stencil: main.cu kernel.cu",
            "\t$(NVCC) $(NVCCFLAGS) -o $@ main.cu",
            *RUN_RULES,
        ]
    )


def readme(plan: Plan, program_name: str) -> str:
    prog = plan.program
    at = launch(tuple(int(n or 0) for n in prog.shape))
    grid = " × ".join(map(str, at.grid))
    threads = " × ".join(map(str, at.block[: min(prog.rank, 2)]))
    return "\n".join(
        [
            f"# {comment(program_name)} on a GPU (stencilmap `cuda`)",
            "",
            "`kernel.cu` is the code `stencilmap run --backend gpu` compiles (NVRTC, `--fmad=false`) and runs",
            f"for this program: one kernel per stencil over a grid of {grid} blocks of {threads} threads, each",
            f"thread computing {at.chunk} point(s), {prog.iterate} time step(s), iterated fields ping-ponging",
            "between two device buffers. `main.cu` runs it on raw data files",
            "(it includes `kernel.cu`; `make` compiles the one file with nvcc). Build and run:",
            "",
            "```console",
            "$ make",
            "$ ./stencil IN_DIR OUT_DIR",
            "```",
            "",
            *file_table(plan),
            "Undefined output points (a `shrink` boundary's margin) are NaN (float) or 0. The results equal",
            "`stencilmap run --backend gpu` on the same inputs (`--fmad=false`: no fused multiply-adds, as the",
            "reference rounds).",
            "",
        ]
    )
