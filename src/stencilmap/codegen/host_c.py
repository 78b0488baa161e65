"""The files around the ``c-openmp`` target's ``kernel.c`` (issue 25): a host program that runs it on raw
data files, its Makefile, and a README — so the folder builds and runs as it is, as the FPGA targets' do.

``main.c`` does what the cpu backend's runner (``backends.cpu._Runner``) does: it reads every input and
param (``IN_DIR/<name>.bin``, little-endian C order, the field's shape), keeps a definedness mask beside
each field that may hold undefined points, applies ``sm_block`` (the kernel's overlapped-tile driver) in
blocks of time steps, swaps the iterated fields' buffers between blocks (the caller's input is never
written), and writes each output (``OUT_DIR/<output>.bin``; undefined points NaN or 0, as ``run`` writes
them). The block size and tile are the cost model's choice for the program's grid (``backends.cost``).
"""

from __future__ import annotations

from math import prod

from stencilmap.backends.cexpr import ctype
from stencilmap.backends.cost import choose
from stencilmap.backends.cpu import FLAGS, default_threads
from stencilmap.backends.plan import Plan
from stencilmap.names import comment, identifier
from stencilmap.program import dtypes as dt

#: ``load`` and ``save``: one raw little-endian file per field (``DIR/<name>.bin``), C and C++ alike; a
#: missing or short input is one line on stderr and exit status 2.
FILE_IO = (
    "static void *load(const char *dir, const char *name, size_t bytes) {",
    "  char path[4096];",
    '  snprintf(path, sizeof path, "%s/%s.bin", dir, name);',
    '  FILE *f = fopen(path, "rb");',
    '  if (!f) { fprintf(stderr, "cannot open %s\\n", path); exit(2); }',
    "  void *p = malloc(bytes ? bytes : 1);",
    '  if (!p || fread(p, 1, bytes, f) != bytes || fgetc(f) != EOF) { fprintf(stderr, "%s: expected %zu bytes\\n", path, bytes); exit(2); }',
    "  fclose(f);",
    "  return p;",
    "}",
    "",
    "static void save(const char *dir, const char *name, const void *p, size_t bytes) {",
    "  char path[4096];",
    '  snprintf(path, sizeof path, "%s/%s.bin", dir, name);',
    '  FILE *f = fopen(path, "wb");',
    '  if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) { fprintf(stderr, "cannot write %s\\n", path); exit(1); }',
    "}",
    "",
)


def _elements(plan: Plan, name: str, shape: tuple[int, ...]) -> int:
    return prod(shape[a] for a in plan.axes(name))


def _strides(plan: Plan, name: str, shape: tuple[int, ...]) -> list[int]:
    """``sm_buf.s``: the element strides of the field's own C-order array, all axes but its last."""
    axes = plan.axes(name)
    return [prod(shape[b] for b in axes[j + 1 :]) for j in range(len(axes) - 1)]


def main_c(plan: Plan, program_name: str) -> str:
    """``main.c``: ``<program> IN_DIR OUT_DIR [THREADS]``."""
    prog = plan.program
    shape = tuple(int(n or 0) for n in prog.shape)
    rank = len(shape)
    choice = choose(plan, shape, prog.iterate, default_threads(), scheme="tiles")
    ins, outs = [i.name for i in prog.inputs], list(prog.outputs)
    lines = [
        f"/* Host program of {comment(program_name)} (stencilmap, c-openmp): runs kernel.c on raw data files.",
        " * Usage: ./stencil IN_DIR OUT_DIR [THREADS]; IN_DIR/<field>.bin holds each input and param in",
        " * little-endian C order; OUT_DIR/<output>.bin receives each output (undefined points NaN or 0). */",
        "#include <math.h>",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "",
        "typedef struct { void *v; uint8_t *m; int64_t s[3]; int64_t off; int64_t k; int64_t q; } sm_buf;",
        "int sm_block(const int64_t *n, const int64_t *olo, const int64_t *ohi, int64_t steps, const int64_t *tile,",
        "             int threads, const sm_buf *inputs, const sm_buf *outputs, void *const *P);",
        "",
        *FILE_IO,
        "static uint8_t *ones(size_t n) { uint8_t *m = malloc(n ? n : 1); if (!m) exit(3); memset(m, 1, n); return m; }",
        "",
        "int main(int argc, char **argv) {",
        '  if (argc < 3 || argc > 4) { fprintf(stderr, "usage: %s IN_DIR OUT_DIR [THREADS]\\n", argv[0]); return 2; }',
        "  const int threads = argc == 4 ? atoi(argv[3]) : 0;  /* 0: OpenMP's default */",
        f"  const int64_t n[{rank}] = {{{', '.join(map(str, shape))}}};",
        f"  const int64_t zero[{rank}] = {{0}};",
        f"  const int64_t tile[{rank}] = {{{', '.join(map(str, choice.tile))}}};",
        f"  const int64_t iterate = {prog.iterate}, block = {choice.block};",
    ]
    fields: dict[str, tuple[str, str, int]] = {}  # name -> (C variable, C type, elements)
    for role, names in (("in", ins), ("out", outs)):
        for j, name in enumerate(names):
            fields[name] = (f"{role}{j}", ctype(prog.field_dtype(name)), _elements(plan, name, shape))
    for name in ins:
        var, ct, count = fields[name]
        lines.append(f'  {ct} *{var} = load(argv[1], "{identifier(name)}", {count} * sizeof({ct}));')
        mask = f"ones({count})" if name in plan.masked else "NULL"
        lines.append(f"  uint8_t *{var}_m = {mask};")
    for name in outs:
        var, ct, count = fields[name]
        lines.append(f"  {ct} *{var} = calloc({count} ? {count} : 1, sizeof({ct}));")
        lines.append(
            f"  uint8_t *{var}_m = {f'calloc({count} ? {count} : 1, 1)' if name in plan.masked else 'NULL'};"
        )
        lines.append(f"  if (!{var}) return 3;")
    pairs = plan.pairs if plan.feeds else ()
    for _, o in pairs:
        var, ct, count = fields[o]
        lines.append(f"  {ct} *{var}_spare = calloc({count} ? {count} : 1, sizeof({ct}));")
        spare_mask = f"calloc({count} ? {count} : 1, 1)" if o in plan.masked else "NULL"
        lines.append(f"  uint8_t *{var}_spare_m = {spare_mask};")
    params = []
    for j, p in enumerate(prog.params):
        ct = ctype(p.dtype)
        count = prod(p.shape)
        lines.append(f'  {ct} *p{j} = load(argv[1], "{identifier(p.name)}", {count} * sizeof({ct}));')
        params.append(f"p{j}")
    lines.append(f"  void *P[{max(1, len(params))}] = {{{', '.join(params) or 'NULL'}}};")
    lines += [
        "  for (int64_t done = 0; done < iterate; ) {",
        "    const int64_t now = iterate - done < block ? iterate - done : block;",
    ]

    def buf(name: str) -> str:
        var = fields[name][0]
        s = _strides(plan, name, shape) + [0] * (3 - len(_strides(plan, name, shape)))
        return f"{{{var}, {var}_m, {{{', '.join(map(str, s))}}}, 0, 0, 0}}"

    lines.append(f"    const sm_buf ins[{max(1, len(ins))}] = {{{', '.join(buf(i) for i in ins)}}};")
    lines.append(f"    const sm_buf outs[{max(1, len(outs))}] = {{{', '.join(buf(o) for o in outs)}}};")
    lines += [
        "    const int rc = sm_block(n, zero, n, now, tile, threads, ins, outs, P);",
        '    if (rc != 0) { fprintf(stderr, "sm_block failed (%d)\\n", rc); return 1; }',
        "    done += now;",
    ]
    for i, o in pairs:  # ping-pong, as backends.cpu._Runner.step
        vi, vo = fields[i][0], fields[o][0]
        ct = fields[o][1]
        lines += [
            "    {",
            f"      {ct} *state = {vo}; uint8_t *state_m = {vo}_m;",
            f"      {ct} *spare = {vo}_spare ? {vo}_spare : ({ct} *){vi}; uint8_t *spare_m = {vo}_spare ? {vo}_spare_m : {vi}_m;",
            f"      {vo}_spare = NULL; {vo}_spare_m = NULL;",
            f"      {vi} = ({fields[i][1]} *)state; {vi}_m = state_m;",
            f"      {vo} = spare; {vo}_m = spare_m;",
            "    }",
        ]
    lines.append("  }")
    final = {o: i for i, o in pairs}  # after the last block an iterated output sits in its input's buffer
    for o in outs:
        var, ct, count = fields[final.get(o, o)][0], fields[o][1], fields[o][2]
        masked = o in plan.masked
        if masked:
            undefined = "NAN" if dt.is_float(prog.field_dtype(o)) else "0"
            lines.append(
                f"  for (int64_t k = 0; k < {count}; ++k) if (!{var}_m[k]) {var}[k] = ({ct}){undefined};"
            )
        lines.append(f'  save(argv[2], "{identifier(o)}", {var}, {count} * sizeof({ct}));')
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def makefile(program_name: str) -> str:
    flags = " ".join(f for f in FLAGS if f not in ("-fPIC", "-shared"))
    return "\n".join(
        [
            f"# {comment(program_name)}: the cpu backend's kernel and its host program (stencilmap, c-openmp).",
            "# make            builds ./stencil (gcc or $(CC); the flags the cpu backend compiles kernel.c with)",
            "# make run IN=in OUT=out   runs it on IN/<field>.bin, writing OUT/<output>.bin",
            "CC ?= gcc",
            f"CFLAGS ?= {flags}",
            "IN ?= in",
            "OUT ?= out",
            "",
            ".PHONY: all run clean",
            "all: stencil",
            "stencil: main.c kernel.c",
            "\t$(CC) $(CFLAGS) -o $@ main.c kernel.c -lm",
            *RUN_RULES,
        ]
    )


#: The Makefile's ``run`` and ``clean`` rules (``./stencil`` built by ``all``).
RUN_RULES = (
    "run: stencil",
    "\tmkdir -p $(OUT) && ./stencil $(IN) $(OUT)",
    "clean:",
    "\trm -f stencil",
    "",
)


def file_table(plan: Plan) -> list[str]:
    """README lines: the table of the data files ``main`` reads and writes (name, role, dtype, shape)."""
    prog = plan.program
    shape = tuple(int(n or 0) for n in prog.shape)

    def row(name: str, dtype: str, axes: tuple[int, ...], role: str) -> str:
        dims = "×".join(str(shape[a]) for a in axes) or "scalar"
        return f"| `{identifier(name)}.bin` | {role} | {dtype} | {dims} |"

    rows = [row(i.name, i.dtype, plan.axes(i.name), "input") for i in prog.inputs]
    rows += [
        f"| `{identifier(p.name)}.bin` | param | {p.dtype} | {'×'.join(map(str, p.shape)) or 'scalar'} |"
        for p in prog.params
    ]
    rows += [row(o, prog.field_dtype(o), plan.axes(o), "output") for o in prog.outputs]
    return [
        "Each file is little-endian, C order (the last axis fastest):",
        "",
        "| file | role | dtype | shape |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def readme(plan: Plan, program_name: str) -> str:
    prog = plan.program
    return "\n".join(
        [
            f"# {comment(program_name)} on the CPU (stencilmap `c-openmp`)",
            "",
            "`kernel.c` is the code `stencilmap run --backend cpu` compiles and runs for this program (C with",
            f"OpenMP, {prog.iterate} time step(s) fused in blocks over overlapped tiles); `main.c` runs it on raw",
            "data files. Build and run:",
            "",
            "```console",
            "$ make",
            "$ ./stencil IN_DIR OUT_DIR [THREADS]",
            "```",
            "",
            *file_table(plan),
            "Undefined output points (a `shrink` boundary's margin) are NaN (float) or 0. The results equal",
            "`stencilmap run` bit for bit on the same inputs.",
            "",
        ]
    )
