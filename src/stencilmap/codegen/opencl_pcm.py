"""Target ``opencl`` for ``pcm`` designs: the single-work-item kernel of the OpenCL FPGA platform
(OpenCL paper §3, Algorithm 1, Fig. 4).

One loop, one iteration per cycle. Each cycle the readers take P_CELL new cells of every input; then
PCM 0 … D−1 (a loop unrolled on the FPGA, ``SM_UNROLL``: ``#pragma unroll`` under ``aoc``, as is
every loop over cells, lanes and shift-register cells; only the cycle loop stays rolled) each shift, per
field read, one shift register by P_CELL cells (§3, Fig. 4: a PCM's shift registers hold its fields, every
stencil of the PCM reads the one of a field), put in the P_CELL cells its producer emits this cycle (a
reader, the previous PCM, or an earlier stencil of the same PCM), and fire P_CELL PE lanes of each stencil
on the registers' taps. The register of a field is named after its first reader in stencil order and
shifted at that reader's turn; a later reader of the same PCM sees it as shifted this cycle. PCM t's outputs
feed PCM t + 1 in the same cycle; the last PCM's go to memory.

Timing, in cycles of lag (``LAG_*`` in ``pcm.h``, functions of P_CELL): a stencil fires its n-th beat
once every producer has emitted the beat holding its farthest forward tap a_max, ⌈a_max / P_CELL⌉
beats later. An edge whose consumer lags its producer by Δ beats needs a register of
``Δ·P_CELL + P_CELL − a_min`` cells, which at P_CELL = 1 and Δ = a_max is the paper's
(q − 1)N + p + 1 = D_r + 1 (Fig. 6); a field's register has the most any of its readers needs. D and P_CELL are ``#define``s a user may edit.

Iterated fields (``Program.feeds``: positional or by ``feedback`` name) enter PCM 0 from memory and
PCM t > 0 from PCM t − 1's output; each is read ``LAG_PASS − LAG_out`` beats ahead so both line up, and
the loop starts ``LEAD`` cycles early so none of those first cells is skipped. An input no output feeds
(FDTD's coefficients) is read by every PCM afresh, PCM t ``t·LAG_PASS`` beats behind PCM 0.
"""

from __future__ import annotations

from math import prod

from stencilmap.analysis.windows import access_sets, linearize
from stencilmap.codegen.boundary import inside, port_reads, preserve_box
from stencilmap.codegen.ctypes_ import ctype, literal
from stencilmap.codegen.expr import ExprEmitter, port_variable
from stencilmap.codegen.helpers import helpers_text
from stencilmap.codegen.registry import Port, Values
from stencilmap.codegen.writer import Writer
from stencilmap.design.common import port_name
from stencilmap.design.ir import Design
from stencilmap.names import comment, identifier
from stencilmap.program.graph import stencil_order
from stencilmap.program.ir import Input, Program, Stencil

PRELUDE = """\
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#pragma OPENCL FP_CONTRACT OFF
#if defined(INTELFPGA_CL)
#define SM_SINGLE_WORK_ITEM __attribute__((max_global_work_dim(0)))
#define SM_AUTORUN __attribute__((max_global_work_dim(0))) __attribute__((autorun))
#define SM_UNROLL _Pragma("unroll")
#else  // elsewhere (PoCL, the emulation) unrolling only slows the build down
#define SM_SINGLE_WORK_ITEM
#define SM_AUTORUN
#define SM_UNROLL
#endif
"""


class PcmKernel:
    """The text of ``pcm.h`` and ``kernel.cl`` for one program (the pass every PCM computes)."""

    def __init__(self, design: Design, program: Program, values: Values, top: str) -> None:
        self.design, self.program, self.top = design, program, top
        params = dict(design.parameters)
        self.d, self.p = int(str(params["d"])), int(str(params["P_cell"]))
        self.shape = tuple(int(n or 0) for n in program.shape)
        self.order = stencil_order(program)
        self.chained = dict(program.feeds())  # input -> the output of the previous PCM feeding it
        self.loaded: set[str] = set()  # the inputs the design reads from memory (``_body``)
        self.exprs = ExprEmitter(program, {p.name: values[p.name] for p in program.params}, "opencl")
        self.ports = {
            st.name: tuple(
                sorted(port_name(f, a) for f, offs in access_sets(st, program).items() for a in offs)
            )
            for st in self.order
        }

    def taps(self, st: Stencil, field: str) -> list[int]:
        axes = self.program.field_axes(field)
        return sorted({linearize(a, axes, self.shape) for a in access_sets(st, self.program)[field]})

    def fields(self, st: Stencil) -> list[str]:
        return sorted(access_sets(st, self.program))

    def is_stencil(self, field: str) -> bool:
        return self.program.stencil(field) is not None

    # ------------------------------------------------------------------------------------- header

    def header(self) -> str:
        w = Writer()
        w.line(f"// {self.top}: parameters of the PCM kernel of '{comment(self.program.name)}' (stencilmap).")
        w.line("// OpenCL FPGA platform §3: D pipelined computation modules of P_CELL PEs each. Edit D and")
        w.line("// P_CELL here; every size and lag below follows from them.")
        w.line(f"#ifndef {self.top.upper()}_H")
        w.line(f"#define {self.top.upper()}_H")
        w.line()
        w.line(f"#define D {self.d}  // PCMs: iterations computed on chip per pass over memory")
        w.line(f"#define P_CELL {self.p}  // cells each PCM takes and computes per cycle")
        w.line()
        for a, n in enumerate(self.shape):
            w.line(f"#define S{a} {n}L")
        w.line(f"#define N_POINTS {prod(self.shape)}L")
        w.line("#define BEATS ((N_POINTS + P_CELL - 1) / P_CELL)")
        w.line("#define SM_MAX(a, b) ((a) > (b) ? (a) : (b))")
        w.line("#define SM_BEATS_AHEAD(a) ((a) > 0 ? ((a) + P_CELL - 1) / P_CELL : 0)")
        w.line()
        w.line("// Lags and sizes as enumerators (integer constants the compiler evaluates once: as nested")
        w.line("// macros they would expand exponentially along a chain of stencils).")
        w.line("enum {")
        with w.indent():
            w.line("// lag of each stencil within a PCM (beats after the PCM's inputs)")
            for st in self.order:
                terms = []
                for f in self.fields(st):
                    ahead = f"SM_BEATS_AHEAD({max(self.taps(st, f))})"
                    terms.append(f"LAG_{identifier(f)} + {ahead}" if self.is_stencil(f) else ahead)
                expr = terms[0] if terms else "0"
                for t in terms[1:]:
                    expr = f"SM_MAX({expr}, {t})"
                w.line(f"LAG_{identifier(st.name)} = {expr},")
            outs = [f"LAG_{identifier(o)}" for o in self.program.outputs]
            lag = outs[0]
            for o in outs[1:]:
                lag = f"SM_MAX({lag}, {o})"
            w.line(f"LAG_PASS = {lag},  // a PCM's latency in beats")
            w.line(
                f"LEAD = {self._lead()},  // beats the loop starts early: the most a chained input reads ahead"
            )
            w.line("// shift registers: Δ·P_CELL + P_CELL − a_min cells (OpenCL paper Fig. 6 at P_CELL = 1)")
            for f, readers in self.readers().items():
                sizes = []
                for st in readers:
                    sr = self._sr(st, f)
                    w.line(f"DELTA_{sr} = {self._delta(st, f)},")
                    sizes.append(f"DELTA_{sr} * P_CELL + P_CELL - ({min(self.taps(st, f))})")
                size = sizes[0]
                for s in sizes[1:]:
                    size = f"SM_MAX({size}, {s})"
                w.line(f"SIZE_{self._sr(readers[0], f)} = {size},")
        w.line("};")
        w.line()
        w.line("#endif")
        return w.text()

    def _lead(self) -> str:
        """The largest ``LAG_PASS − LAG_out`` of a chained input: its first cells enter PCM 0 that many
        cycles before beat 0 (0 when one output feeds every chained input, or D = 1)."""
        if self.d == 1 or not self.chained:
            return "0"
        lead = "0"
        for out in dict.fromkeys(self.chained.values()):
            lead = f"SM_MAX({lead}, LAG_PASS - LAG_{identifier(out)})"
        return lead

    def readers(self) -> dict[str, list[Stencil]]:
        """Every field read, its readers in stencil order (the first reader names the shift register)."""
        out: dict[str, list[Stencil]] = {}
        for st in self.order:
            for f in self.fields(st):
                out.setdefault(f, []).append(st)
        return out

    def _sr(self, st: Stencil, field: str) -> str:
        return f"{identifier(st.name)}_{identifier(field)}"

    def _register(self, field: str) -> str:
        """The name of ``field``'s shift register (``sr_`` and ``SIZE_`` prefixed): its first reader's."""
        return self._sr(self.readers()[field][0], field)

    def _delta(self, st: Stencil, field: str) -> str:
        """Beats between the producer of ``field`` and ``st``'s firing (see the module docstring)."""
        if self.is_stencil(field):
            return f"LAG_{identifier(st.name)} - LAG_{identifier(field)}"
        out = self.chained.get(field)
        if out is None or self.d == 1:
            return f"LAG_{identifier(st.name)}"
        return f"LAG_PASS - LAG_{identifier(out)} + LAG_{identifier(st.name)}"

    # ------------------------------------------------------------------------------------- kernel

    def kernel(self, ports: tuple[Port, ...]) -> str:
        body = Writer()
        self._body(body, ports)
        w = Writer()
        w.line(
            f"// {self.top}: Intel FPGA OpenCL single-work-item kernel of the PCM design of '{comment(self.program.name)}'"
        )
        w.line("// (stencilmap). Structure: OpenCL FPGA platform §3, Algorithm 1 — one loop, one beat of")
        w.line("// P_CELL cells per cycle, D chained PCMs of shift registers and PE lanes.")
        w.line(f'#include "{self.top}.h"')
        w.lines_of(PRELUDE)
        w.line()
        functions = [
            self.exprs.stencil_function(st, self.ports[st.name], f"compute_{identifier(st.name)}")
            for st in self.order
        ]  # before the helpers: they record the helpers they call
        w.lines_of(helpers_text(self.exprs.helpers, "opencl"))
        w.line()
        for text in functions:
            w.lines_of(text)
            w.line()
        for text in body.lines:
            w.line(text)
        return w.text()

    def _args(self, ports: tuple[Port, ...]) -> str:
        return ", ".join(
            f"__global {'const ' if p.direction == 'in' else ''}{ctype(p.dtype, 'opencl') if p.dtype != 'bool' else 'uchar'}* restrict "
            f"{p.direction}_{identifier(p.field)}"
            for p in ports
        )

    def _body(self, w: Writer, ports: tuple[Port, ...]) -> None:
        prog = self.program
        self.loaded = {p.field for p in ports if p.direction == "in"}  # the inputs the design has readers for
        with w.block(f"__kernel SM_SINGLE_WORK_ITEM void {self.top}({self._args(ports)})"):
            registers = [self._register(f) for f in self.readers()]
            for f, sr in zip(self.readers(), registers, strict=True):
                w.line(f"{ctype(prog.field_dtype(f), 'opencl')} sr_{sr}[D][SIZE_{sr}];")
            for st in self.order:
                w.line(f"{ctype(st.dtype, 'opencl')} y_{identifier(st.name)}[D][P_CELL];")
            w.line("SM_UNROLL")
            with w.block("for (int t = 0; t < D; ++t)"):
                for sr in registers:
                    w.line("SM_UNROLL")
                    w.line(f"for (int i = 0; i < SIZE_{sr}; ++i) sr_{sr}[t][i] = 0;")
            w.line()
            with w.block("cycles: for (long c = -LEAD; c < BEATS + D * LAG_PASS; ++c)"):
                self._readers(w, self.loaded)
                w.line("SM_UNROLL")
                with w.block("for (int t = 0; t < D; ++t)"):
                    for st in self.order:
                        self._stencil(w, st)
                self._writers(w)

    def replayed(self, field: str) -> bool:
        """An input no output feeds, with d > 1: every PCM reads it afresh, LAG_PASS beats behind the
        previous one (coefficients stay the same every time step)."""
        return self.d > 1 and self.program.input(field) is not None and field not in self.chained

    def _readers(self, w: Writer, read: set[str]) -> None:
        """P_CELL new cells of every input the design reads (``read``: those with a port; lower-dimensional
        ones replayed over the missing axes)."""
        prog = self.program
        for inp in prog.inputs:
            if inp.name not in read:  # no reader module, no kernel argument: nothing reads it
                continue
            if self.replayed(inp.name):
                self._replay(w, inp)
                continue
            T = ctype(inp.dtype, "opencl")
            out = self.chained.get(inp.name)
            ahead = "0" if out is None or self.d == 1 else f"(LAG_PASS - LAG_{identifier(out)})"
            w.line(
                f"{T} x_{identifier(inp.name)}[P_CELL];  // input {comment(inp.name)}, {ahead} beats ahead"
            )
            w.line("SM_UNROLL")
            with w.block("for (int j = 0; j < P_CELL; ++j)"):
                w.line(f"const long i = (c + {ahead}) * P_CELL + j;")
                w.line(f"x_{identifier(inp.name)}[j] = {literal(0, inp.dtype, 'opencl')};")
                with w.block("if (i >= 0 && i < N_POINTS)"):
                    self._coords(w, "i")
                    w.line(f"x_{identifier(inp.name)}[j] = {self._load(inp)};")

    def _replay(self, w: Writer, inp: Input) -> None:
        """PCM t's P_CELL cells of an input fed by no output: the beat PCM t's pass is at."""
        name = identifier(inp.name)
        w.line(
            f"{ctype(inp.dtype, 'opencl')} x_{name}[D][P_CELL];  // input {comment(inp.name)}, read by every PCM"
        )
        w.line("SM_UNROLL")
        with w.block("for (int t = 0; t < D; ++t)"):
            w.line("SM_UNROLL")
            with w.block("for (int j = 0; j < P_CELL; ++j)"):
                w.line("const long i = (c - t * LAG_PASS) * P_CELL + j;")
                w.line(f"x_{name}[t][j] = {literal(0, inp.dtype, 'opencl')};")
                with w.block("if (i >= 0 && i < N_POINTS)"):
                    self._coords(w, "i")
                    w.line(f"x_{name}[t][j] = {self._load(inp)};")

    def _load(self, inp: Input) -> str:
        own = tuple(self.shape[a] for a in inp.axes)
        strides = [prod(own[k + 1 :]) for k in range(len(own))]
        addr = " + ".join(f"c{a} * {s}L" for a, s in zip(inp.axes, strides, strict=True)) or "0"
        value = f"in_{identifier(inp.name)}[{addr}]"
        return f"({value} != 0)" if inp.dtype == "bool" else value

    def _coords(self, w: Writer, index: str) -> None:
        for a in range(len(self.shape)):
            stride = " * ".join(f"S{b}" for b in range(a + 1, len(self.shape))) or "1L"
            w.line(f"const long c{a} = ({index} / ({stride})) % S{a};")

    def _source(self, field: str) -> str:
        """The P_CELL cells ``field`` has this cycle in PCM t."""
        if self.is_stencil(field):
            return f"y_{identifier(field)}[t]"
        if self.replayed(field):
            return f"x_{identifier(field)}[t]"
        out = self.chained.get(field)
        if out is None or self.d == 1:
            return f"x_{identifier(field)}"
        return f"(t == 0 ? x_{identifier(field)} : y_{identifier(out)}[t - 1])"

    def _stencil(self, w: Writer, st: Stencil) -> None:
        prog = self.program
        name = identifier(st.name)
        w.line(f"// PCM t, stencil {comment(st.name)}: shift its registers, fire P_CELL lanes")
        with w.block(""):
            for f in self.fields(st):
                if self.readers()[f][0] is not st:
                    continue  # an earlier stencil of this PCM shifted it this cycle
                reg = self._register(f)
                sr = f"sr_{reg}[t]"
                T = ctype(prog.field_dtype(f), "opencl")
                w.line("SM_UNROLL")
                w.line(f"for (int i = SIZE_{reg} - 1; i >= P_CELL; --i) {sr}[i] = {sr}[i - P_CELL];")
                if self.is_stencil(f) or self.chained.get(f) is None or self.d == 1:
                    src = self._source(f)
                    w.line("SM_UNROLL")
                    w.line(f"for (int j = 0; j < P_CELL; ++j) {sr}[P_CELL - 1 - j] = {src}[j];")
                else:
                    out = identifier(str(self.chained[f]))
                    # no reader: no output depends on the first pass's values of f (the design dropped them)
                    first = (
                        f"x_{identifier(f)}[j]"
                        if f in self.loaded
                        else literal(0, prog.field_dtype(f), "opencl")
                    )
                    w.line("SM_UNROLL")
                    w.line(
                        f"for (int j = 0; j < P_CELL; ++j) {sr}[P_CELL - 1 - j] = "
                        f"t == 0 ? {first} : ({T})y_{out}[t - 1][j];"
                    )
            w.line(f"const long n = c - t * LAG_PASS - LAG_{name};  // this PCM's beat of {comment(st.name)}")
            w.line("SM_UNROLL")
            with w.block("for (int j = 0; j < P_CELL; ++j)"):
                w.line("const long addr = n * P_CELL + j;")
                w.line(f"{ctype(st.dtype, 'opencl')} value = {literal(0, st.dtype, 'opencl')};")
                with w.block("if (n >= 0 && addr < N_POINTS)"):
                    self._coords(w, "addr")
                    args = self._port_values(w, st)
                    args += self.exprs.guard_values(st, tuple(f"S{a}" for a in range(len(self.shape))))
                    w.line(f"value = compute_{name}({', '.join(args)});")
                    self._preserve(w, st)
                w.line(f"y_{name}[t][j] = value;")

    def _port_values(self, w: Writer, st: Stencil) -> list[str]:
        """Each port's register cell, then its value with the boundary applied (``boundary``; a copy
        boundary reads the centre's cell, always inside the grid)."""
        prog = self.program
        ports = self.ports[st.name]
        reads = port_reads(prog, st, ports)
        for read in reads:
            x = sum(o * s for o, s in zip(read.offset, self._strides(), strict=True))
            idx = f"DELTA_{self._sr(st, read.field)} * P_CELL + P_CELL - 1 - j - ({x})"
            cell = f"sr_{self._register(read.field)}[t][{idx}]"
            w.line(f"const {ctype(read.dtype, 'opencl')} cell_{port_variable(read.port)} = {cell};")
        shape = tuple(f"S{a}" for a in range(len(self.shape)))
        args = []
        for read in reads:
            if read.kind == "constant":
                other = literal(read.value, read.dtype, "opencl")
            elif read.kind == "copy":
                other = f"cell_{port_variable(read.centre)}"
            else:
                other = f"{literal(0, read.dtype, 'opencl')} /* shrink: undefined, not compared */"
            var = port_variable(read.port)
            cond = inside(read, shape)
            value = f"cell_{var}" if cond == "1" else f"({cond}) ? cell_{var} : {other}"
            w.line(f"const {ctype(read.dtype, 'opencl')} {var} = {value};")
            args.append(var)
        return args

    def _strides(self) -> list[int]:
        return [prod(self.shape[a + 1 :]) for a in range(len(self.shape))]

    def _preserve(self, w: Writer, st: Stencil) -> None:
        kept = preserve_box(self.program, st.name, self.ports[st.name])
        if kept is None:
            return
        centre, low, high = kept
        box = " && ".join(f"c{a} >= {low[a]} && c{a} < S{a} - {high[a]}" for a in range(len(self.shape)))
        w.line(f"if (!({box})) value = {port_variable(centre)};  // border: preserve")

    def _writers(self, w: Writer) -> None:
        for out in self.program.outputs:
            st = self.program.stencil(out)
            assert st is not None
            name = identifier(out)
            w.line(f"const long n_{name} = c - (D - 1) * LAG_PASS - LAG_{name};  // beat of output {out}")
            w.line("SM_UNROLL")
            with w.block("for (int j = 0; j < P_CELL; ++j)"):
                w.line(f"const long addr = n_{name} * P_CELL + j;")
                value = f"y_{name}[D - 1][j]"
                if st.dtype == "bool":
                    value = f"(uchar){value}"
                w.line(f"if (n_{name} >= 0 && addr < N_POINTS) out_{name}[addr] = {value};")
