"""The simulator's memory layout and channel primitives (Numba).

Everything the kernel touches lives in two flat arrays, ``I`` (int64) and ``F`` (float64): a call between
compiled functions costs per array argument, so every function takes just those two. ``layout.py`` packs
them; this module names the regions (a 32-slot header of bases), the module table columns, the channel
table columns, and implements the FIFO channels: a beat pushed in a cycle is visible from the next one.
"""

from __future__ import annotations

from numba import njit

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
M_E = 21  # 8 more (PE stream geometry)
M_R = 29  # 8 more (PE border preserve)
M_S = 37  # 4 state words
MCOLS = 41

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


@njit(cache=True, inline="always")
def mrow(I, m):
    return I[H_MOD] + m * MCOLS


@njit(cache=True, inline="always")
def crow(I, c):
    return I[H_CH] + c * CCOLS


@njit(cache=True, inline="always")
def avail(I, c, now):
    r = I[H_CH] + c * CCOLS
    n = I[r + C_COUNT]
    if I[r + C_PUSH] == now:
        n -= 1
    return n > 0


@njit(cache=True, inline="always")
def room(I, c, now):
    r = I[H_CH] + c * CCOLS
    n = I[r + C_COUNT]
    if I[r + C_POP] == now:
        n += 1
    return n < I[r + C_CAP]


@njit(cache=True, inline="always")
def push(I, F, c, now, src):
    """Push one beat (``width`` values from F[src:]) into channel c."""
    r = I[H_CH] + c * CCOLS
    cap, w, n = I[r + C_CAP], I[r + C_WIDTH], I[r + C_COUNT]
    slot = I[r + C_HEAD] + n
    if slot >= cap:
        slot -= cap
    at = I[r + C_BASE] + slot * w
    for i in range(w):
        F[at + i] = F[src + i]
    n += 1
    I[r + C_COUNT] = n
    I[r + C_PUSH] = now
    if n > I[r + C_PEAK]:
        I[r + C_PEAK] = n


@njit(cache=True, inline="always")
def pop(I, F, c, now, dst):
    """Pop one beat of channel c into F[dst:]; returns its width."""
    r = I[H_CH] + c * CCOLS
    cap, w, h = I[r + C_CAP], I[r + C_WIDTH], I[r + C_HEAD]
    at = I[r + C_BASE] + h * w
    for i in range(w):
        F[dst + i] = F[at + i]
    h += 1
    I[r + C_HEAD] = 0 if h == cap else h
    I[r + C_COUNT] -= 1
    I[r + C_POP] = now
    return w


@njit(cache=True, inline="always")
def outs_room(I, m, now):
    row = mrow(I, m)
    base = I[H_LIST]
    for i in range(I[row + M_OUT0], I[row + M_OUT1]):
        if not room(I, I[base + i], now):
            return False
    return True


@njit(cache=True, inline="always")
def ins_avail(I, m, now):
    row = mrow(I, m)
    base = I[H_LIST]
    for i in range(I[row + M_IN0], I[row + M_IN1]):
        if not avail(I, I[base + i], now):
            return False
    return True


@njit(cache=True, inline="always")
def push_all(I, F, m, now, src):
    row = mrow(I, m)
    base = I[H_LIST]
    for i in range(I[row + M_OUT0], I[row + M_OUT1]):
        push(I, F, I[base + i], now, src)
