"""The simulator's memory layout: names shared by ``layout.py`` (which packs) and ``csrc/engine.c``
(which runs; ``engine.py`` hands it these names as C definitions).

Everything the engine touches lives in two flat arrays, ``I`` (int64) and ``F`` (float64): a 32-slot
header of region bases, the module table, the channel table, and the regions listed in ``layout.py``.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------- layout
# header slots of I
H_NMOD, H_NCH, H_MOD, H_CH, H_LIST, H_PIPE, H_DEST, H_CODE, H_PINFO, H_NBANK = range(10)
H_STORE, H_MEM, H_SCR, H_STACK, H_TEMPS, H_STREAM, H_OUT, H_CONST, H_PVAL, H_MODF, H_BW, H_OUTX = range(
    10, 22
)
HEADER = 32

# module table columns
M_KIND, M_IN0, M_IN1, M_OUT0, M_OUT1, M_MEMB, M_GROUP, M_GRP0, M_GRP1, M_FIRE = range(10)
M_BUSY, M_STARVED, M_BLOCKED = 10, 11, 12
M_P = 13  # 8 kind parameters
M_S = 21  # 4 state words (beside the parameters: every kind touches 3 cache lines of its row)
M_E = 25  # 8 more (PE stream geometry)
M_R = 33  # 8 more (PE border preserve)
M_EV = 41  # PEs: which of the design's compiled evaluators computes the stencil (engine.py)
M_IN = 42  # PEs: the interior, 6 words lo[3], hi[3]: lo <= x < shape - hi puts every port in bounds
M_T = 48  # 4 more state words kept incrementally instead of divided out each cycle: PEs: the firing's
# index in its tile and its point (x0, x1, x2); windows: the ring positions of the next firing and input
MCOLS = 52

# bank table columns (F): credit, rate per cycle, credit cap, bytes reserved for writers, writers' claims
BWCOLS = 5

# channel table columns
C_CAP, C_WIDTH, C_COUNT, C_HEAD, C_BASE, C_PUSH, C_POP, C_PEAK = range(8)
CCOLS = 8

# module kinds
K_READER, K_WRITER, K_BCAST, K_FIFO, K_TAP, K_WINDOW, K_PE = range(7)
# status
RUNNING, DONE, DEADLOCK = 0, 1, 2
# activity (trace codes); WAIT_BW: a memory port waiting for bandwidth credit (counted as blocked)
IDLE, BUSY, STARVED, BLOCKED, FINISHED, WAIT_BW = 0, 1, 2, 3, 4, 5
