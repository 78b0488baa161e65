"""The EMAX 3D-stencil library's instruction mapping (EMAX paper §3.3, §4.3–§4.6, Fig. 4, 8, 9, 11).

A degree-d star stencil ``out = c + Σ c_o · v(o)`` over one input field is mapped onto the PE grid of an
EMAX (rows × columns; each PE an EAG with its LMM and FIFOs, and two ALUs EX1 → EX2). One execution
computes one X-stream (a row of X, or one chunk of it, Fig. 7) of p neighbouring Z planes.

The basic pattern of one plane (w = 2d + 2 columns, h = 2d + 5 rows; relative row r, column c)::

    rows 0..2d   c = 0      LD  A[z][y−d+r]   Y neighbours in one column, dist = 1 (Fig. 4, 8): the next
                                              execution shifts the mapping one row and reuses 2d streams
                 c = 1      LD  A[z−d+r][y]   Z neighbours (r ≠ d)
                 c = 1..2d  FIFO x−d..x+d     row d: X neighbours from the FIFOs that the centre LMM fills
                 c = 2d+1   FMA acc chain     EX1 Y term, EX2 Z term of row r (RGI: the constant c)
    row 2d+1     c = 0..d   FMUL/FMA          centre and the X pairs (x−k, x+k) times their coefficients
    row 2d+2     c = 0..    FADD              the X partial sums, three per PE (EX1, EX2)
    row 2d+3     c = 0      FADD              X sum + acc
    row 2d+4     c = 2d     ST                the result into the PE's LMM (state 4 moves it to DDR3)

It gives 7 rows × 4 columns at degree 1 and 11 × 8 at degree 3, the paper's basic patterns (§4.6).
Packing (§4.4, Fig. 9, 11): p planes share their common loads — a plane's Z neighbour inside the group is
the other plane's centre load, and each of the 2d planes beyond the group is loaded once. When two
patterns fit side by side (2w ≤ columns: degree 1 on 8 columns) the second plane is mirrored into the
free columns one row lower (its Z−1 row then meets the first plane's centre row) and further pairs start
2d + 2 rows lower: their loads use the EAGs of the previous pair's arithmetic rows ("the empty units").
Otherwise patterns stack in subsequent rows. Rows: 8 + 4(⌊p/2⌋ + p mod 2 − 1) − p mod 2 at degree 1,
11p at degree 3, 9p at degree 2 (``geometry.rows``; ``verify_mapping`` checks the placement uses
exactly that many rows and no unit twice).

Modules: ``mapping`` (the instruction IR), ``checks`` (what the library serves), ``pattern`` (the basic
pattern and its packing), ``geometry`` (rows, p, chunks, streams), ``verify`` (invariants), ``build``
(the builder), ``asm`` (the mnemonics as text: the writer and the assembler that checks §3–§5's rules and
reads them back). The mnemonics are a codegen target (``codegen.emax``), with the library's C call
(``codegen.emax_c``).
"""

from stencilmap.design.emax.asm import assemble, read_mnemonics, write_mnemonics
from stencilmap.design.emax.build import build_emax, design_of, emax_device, emax_json, lmm_streams, map_emax
from stencilmap.design.emax.checks import linear_form, star_degree
from stencilmap.design.emax.mapping import FIFOS_PER_ROW, EmaxMapping, Instruction
from stencilmap.design.emax.pattern import basic_pattern, execution_order, origins, place
from stencilmap.design.emax.verify import verify_mapping

__all__ = [
    "FIFOS_PER_ROW",
    "EmaxMapping",
    "Instruction",
    "assemble",
    "basic_pattern",
    "build_emax",
    "design_of",
    "emax_device",
    "emax_json",
    "execution_order",
    "linear_form",
    "lmm_streams",
    "map_emax",
    "origins",
    "place",
    "read_mnemonics",
    "star_degree",
    "verify_mapping",
    "write_mnemonics",
]
