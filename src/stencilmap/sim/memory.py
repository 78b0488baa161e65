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
H_FUSE = 22  # 1: each reuse chain (taps and FIFOs linked by ``next``) runs as one ring buffer when steady
HEADER = 32

# module table columns, grouped by cache line (rows are 64-byte aligned): line 0 what every module reads and
# its statistics; line 1 the state and first parameters (a tap or a reader touches lines 0 and 1 alone)
M_KIND, M_IN0, M_IN1, M_OUT0, M_OUT1, M_BUSY, M_STARVED, M_BLOCKED = range(8)
M_S = 8  # 3 state words
M_MEMB = 11  # base of the module's memory in F
M_P = 12  # 8 kind parameters
M_ACT = 20  # PEs: what retiring did this cycle
M_FIRE = 21  # PEs: what firing did this cycle (the group leader decides for every lane)
M_GROUP, M_GRP0, M_GRP1 = 22, 23, 24  # PEs: the group's leader, and the leader's CSR list of lanes
M_EV = 25  # PEs: which of the design's compiled evaluators computes the stencil (engine.py)
M_T = 26  # 4 more state words kept incrementally instead of divided out each cycle: PEs: the firing's
# index in its tile and its point (x0, x1, x2); windows: the ring positions of the next firing and input
M_E = 32  # 8 more (PE stream geometry)
M_R = 40  # 8 more (PE border preserve)
M_IN = 48  # PEs: the interior, 6 words lo[3], hi[3]: lo <= x < shape - hi puts every port in bounds
MCOLS = 56

# bank table columns (F): credit, rate per cycle, credit cap, bytes reserved for writers, writers' claims
BWCOLS = 5

# channel table columns
C_CAP, C_WIDTH, C_COUNT, C_HEAD, C_BASE, C_PUSH, C_POP, C_PEAK = range(8)
CCOLS = 8

# module kinds
K_READER, K_WRITER, K_BCAST, K_FIFO, K_TAP, K_WINDOW, K_PE, K_NET = range(8)
# status
RUNNING, DONE, DEADLOCK = 0, 1, 2
# activity (trace codes); WAIT_BW: a memory port waiting for bandwidth credit (counted as blocked)
IDLE, BUSY, STARVED, BLOCKED, FINISHED, WAIT_BW = 0, 1, 2, 3, 4, 5
