"""The compiled cycle loop (Numba) over two flat memories: ``I`` (int64) and ``F`` (float64).

All tables live in these two arrays (layout in ``layout.py``): a call between compiled functions costs
about 10 ns per array argument, so every function here takes just ``I`` and ``F``.

Each cycle runs in named phases:

1. **refill** — every DRAM bank gains its bandwidth credit for the cycle;
2. **evaluate** — every module, in a fixed order, decides from the channel state at the *start* of the
   cycle whether it fires (inputs hold a beat, outputs have room, bandwidth is available) and does so;
3. **commit** — implicit: a channel stamps the cycle of its last push and pop, and the evaluate phase
   discounts both (a token pushed this cycle is not yet visible to its consumer, a slot freed this cycle
   not yet to its producer). That is registered-FIFO timing, independent of the module order.
"""

from __future__ import annotations

from numba import njit

from stencilmap.sim.arith import evaluate
from stencilmap.sim.memory import (
    BLOCKED,
    BUSY,
    BWCOLS,
    C_COUNT,
    C_WIDTH,
    CCOLS,
    DEADLOCK,
    DONE,
    FINISHED,
    H_BW,
    H_CH,
    H_DEST,
    H_LIST,
    H_MEM,
    H_MODF,
    H_NBANK,
    H_NCH,
    H_NMOD,
    H_OUT,
    H_OUTX,
    H_PINFO,
    H_PIPE,
    H_PVAL,
    H_SCR,
    H_STREAM,
    IDLE,
    K_BCAST,
    K_FIFO,
    K_READER,
    K_TAP,
    K_WINDOW,
    K_WRITER,
    M_BLOCKED,
    M_BUSY,
    M_E,
    M_FIRE,
    M_GROUP,
    M_GRP0,
    M_GRP1,
    M_IN0,
    M_IN1,
    M_KIND,
    M_MEMB,
    M_OUT0,
    M_OUT1,
    M_P,
    M_R,
    M_S,
    M_STARVED,
    RUNNING,
    STARVED,
    WAIT_BW,
    avail,
    crow,
    ins_avail,
    mrow,
    outs_room,
    pop,
    push,
    push_all,
    room,
)

# --------------------------------------------------------------------------------------------- modules


@njit(cache=True)
def _reader(I, F, m, now):
    row = mrow(I, m)
    pos, total, beat, bank = I[row + M_S], I[row + M_P + 1], I[row + M_P + 2], I[row + M_P + 3]
    if pos >= total:
        return FINISHED
    if not outs_room(I, m, now):
        return BLOCKED
    modf = I[H_MODF] + 2 * m
    cost = F[modf] * beat
    if bank >= 0:
        bw = I[H_BW] + BWCOLS * bank
        if F[bw] - cost < F[bw + 3]:  # writers refused last cycle go first: leave them their bytes
            return WAIT_BW
        F[bw] -= cost
    F[modf + 1] += cost
    src = I[H_STREAM] + I[row + M_P] + pos
    base = I[H_LIST]
    for i in range(I[row + M_OUT0], I[row + M_OUT1]):
        c = I[base + i]
        push(I, F, c, now, src)
        src += I[crow(I, c) + C_WIDTH]
    I[row + M_S] = pos + beat
    return BUSY


@njit(cache=True)
def _writer(I, F, m, now):
    row = mrow(I, m)
    pos, total, beat, bank = I[row + M_S], I[row + M_P + 1], I[row + M_P + 2], I[row + M_P + 3]
    if pos >= total:
        return FINISHED
    if not ins_avail(I, m, now):
        return STARVED
    dest = I[H_DEST] + I[row + M_P] + pos
    stored = 0
    for i in range(beat):
        if I[dest + i] >= 0:
            stored += 1
    modf = I[H_MODF] + 2 * m
    cost = F[modf] * stored
    if bank >= 0:
        bw = I[H_BW] + BWCOLS * bank
        if F[bw] < cost:
            F[bw + 4] += cost  # claim this cycle's credit ahead of the readers next cycle
            return WAIT_BW
        F[bw] -= cost
    F[modf + 1] += cost
    scr = I[H_SCR]
    o = scr
    base = I[H_LIST]
    for i in range(I[row + M_IN0], I[row + M_IN1]):
        o += pop(I, F, I[base + i], now, o)
    out = I[H_OUT]
    for i in range(beat):
        d = I[dest + i]
        if d >= 0:
            F[out + d] = F[scr + i]
    I[row + M_S] = pos + beat
    return BUSY


@njit(cache=True)
def _bcast(I, F, m, now):
    row = mrow(I, m)
    c_in = I[I[H_LIST] + I[row + M_IN0]]
    if not avail(I, c_in, now):
        return STARVED
    if not outs_room(I, m, now):
        return BLOCKED
    scr = I[H_SCR]
    pop(I, F, c_in, now, scr)
    push_all(I, F, m, now, scr)
    return BUSY


@njit(cache=True)
def _fifo(I, F, m, now):
    """A FIFO of ``depth`` beats with first-word fall-through: an element arriving at an empty FIFO
    leaves in the same cycle, so a segment of d beats delays by d cycles as the shift register does."""
    row = mrow(I, m)
    depth, w = I[row + M_P], I[row + M_P + 1]
    n, h = I[row + M_S], I[row + M_S + 1]
    base = I[H_LIST]
    c_in, c_out = I[base + I[row + M_IN0]], I[base + I[row + M_OUT0]]
    mem = I[H_MEM] + I[row + M_MEMB]
    can_in = avail(I, c_in, now)
    can_out = room(I, c_out, now)
    if n == 0:
        if not can_in:
            return STARVED
        if can_out:  # fall through
            scr = I[H_SCR]
            pop(I, F, c_in, now, scr)
            push(I, F, c_out, now, scr)
            return BUSY
        pop(I, F, c_in, now, mem + h * w)
        I[row + M_S] = 1
        return BUSY
    fired = False
    if can_out:
        push(I, F, c_out, now, mem + h * w)
        h += 1
        if h == depth:
            h = 0
        n -= 1
        fired = True
    if n < depth and can_in:  # a slot freed this cycle is reusable (SRL FIFO)
        slot = h + n
        if slot >= depth:
            slot -= depth
        pop(I, F, c_in, now, mem + slot * w)
        n += 1
        fired = True
    I[row + M_S] = n
    I[row + M_S + 1] = h
    return BUSY if fired else BLOCKED


@njit(cache=True)
def _tap(I, F, m, now):
    """A SODA forwarding tap at chain offset x: passes every element of its lane down the chain
    (``next``) and sends to the PEs, at PE firing n, element n + s of the lane (s = (x − r)/k;
    placeholders outside the tile)."""
    row = mrow(I, m)
    s, v, c_next = I[row + M_P], I[row + M_P + 1], I[row + M_P + 3]
    recv, sent = I[row + M_S], I[row + M_S + 1]
    if recv >= v and sent >= v:
        if I[row + M_S + 2] + 1 >= I[row + M_P + 4]:
            return FINISHED
        I[row + M_S + 2] += 1
        recv, sent = 0, 0
        I[row + M_S] = 0
        I[row + M_S + 1] = 0
    want = sent + s  # the lane element the PEs take next from this tap
    scr = I[H_SCR]
    blocked = False
    if sent < v and (want < 0 or (want >= v and recv >= v)):
        # a placeholder (before the lane's first element or after its last) needs no input
        if outs_room(I, m, now):
            F[scr] = 0.0
            push_all(I, F, m, now, scr)
            I[row + M_S + 1] = sent + 1
            return BUSY
        blocked = True
    if recv >= v:
        return BLOCKED if blocked else STARVED
    emit = sent < v and want == recv
    if emit and blocked:
        return BLOCKED
    if not emit and want < recv <= v - 1 + s:
        return BLOCKED if blocked else IDLE  # the PEs still need this element: keep it until they do
    c_in = I[I[H_LIST] + I[row + M_IN0]]
    if not avail(I, c_in, now):
        return BLOCKED if blocked else STARVED
    if c_next >= 0 and not room(I, c_next, now):
        return BLOCKED
    if emit and not outs_room(I, m, now):
        return BLOCKED
    pop(I, F, c_in, now, scr)
    if c_next >= 0:
        push(I, F, c_next, now, scr)
    if emit:
        push_all(I, F, m, now, scr)
        I[row + M_S + 1] = sent + 1
    I[row + M_S] = recv + 1
    return BUSY


@njit(cache=True)
def _window(I, F, m, now):
    """A window buffer (StencilFlow internal buffer, PCM shift register): output o carries, at firing n,
    elements n·P + x_o + [0, w_o) of the stream; it stores at most ``size`` elements."""
    row = mrow(I, m)
    p, v, size, x_min, x_hi = (
        I[row + M_P],
        I[row + M_P + 1],
        I[row + M_P + 2],
        I[row + M_P + 3],
        I[row + M_P + 4],
    )
    per_tile, ring, tiles = I[row + M_P + 5], I[row + M_P + 6], I[row + M_P + 7]
    recv, fired = I[row + M_S], I[row + M_S + 1]
    if fired >= v and recv >= per_tile:
        if I[row + M_S + 2] + 1 >= tiles:
            return FINISHED
        I[row + M_S + 2] += 1
        recv, fired = 0, 0
        I[row + M_S] = 0
        I[row + M_S + 1] = 0
    mem = I[H_MEM] + I[row + M_MEMB]
    scr = I[H_SCR]
    lists = I[H_LIST]
    outx = I[H_OUTX]
    act = IDLE
    if fired < v:
        if recv >= min(per_tile, fired * p + x_hi):
            if outs_room(I, m, now):
                for i in range(I[row + M_OUT0], I[row + M_OUT1]):
                    c = I[lists + i]
                    first = fired * p + I[outx + i]
                    for e in range(I[crow(I, c) + C_WIDTH]):
                        a = first + e
                        F[scr + e] = F[mem + a % ring] if 0 <= a < per_tile else 0.0
                    push(I, F, c, now, scr)
                fired += 1
                I[row + M_S + 1] = fired
                act = BUSY
            else:
                act = BLOCKED
        else:
            act = STARVED
    if recv < per_tile:
        oldest = max(0, fired * p + x_min)  # what a firing this cycle consumed is free again
        if recv + p - oldest <= size and ins_avail(I, m, now):
            o = scr
            for i in range(I[row + M_IN0], I[row + M_IN1]):
                o += pop(I, F, I[lists + i], now, o)
            for e in range(p):
                F[mem + (recv + e) % ring] = F[scr + e]
            I[row + M_S] = recv + p
            act = BUSY
    return act


@njit(cache=True)
def _pe_retire(I, F, m, now):
    """Send the oldest result on when it has matured and the output has room (II = 1 pipeline)."""
    row = mrow(I, m)
    lat, w = I[row + M_P + 5], I[row + M_P + 7]
    n_pipe, h = I[row + M_S + 1], I[row + M_S + 2]
    if n_pipe == 0 or I[I[H_PIPE] + I[row + M_E + 7] + h] > now:
        return IDLE
    c_out = I[I[H_LIST] + I[row + M_OUT0]]
    if not room(I, c_out, now):
        return BLOCKED
    push(I, F, c_out, now, I[H_MEM] + I[row + M_MEMB] + h * w)
    I[row + M_S + 2] = (h + 1) % lat
    I[row + M_S + 1] = n_pipe - 1
    return BUSY


@njit(cache=True)
def _pe_ready(I, m, now):
    """IDLE when the PE can fire now, else why not (FINISHED, BLOCKED on a full pipeline, STARVED)."""
    row = mrow(I, m)
    if I[row + M_S] >= I[row + M_E + 1] * I[row + M_E + 6]:
        return FINISHED
    if I[row + M_S + 1] >= I[row + M_P + 5]:
        return BLOCKED
    if not ins_avail(I, m, now):
        return STARVED
    return IDLE


@njit(cache=True)
def _pe_fire(I, F, m, now):
    """Consume one beat per port, evaluate the stencil for the lane's point(s), enter the pipeline."""
    row = mrow(I, m)
    c0, c1, k0, p0, n_ports = (
        I[row + M_P],
        I[row + M_P + 1],
        I[row + M_P + 2],
        I[row + M_P + 3],
        I[row + M_P + 4],
    )
    lat, lane, w = I[row + M_P + 5], I[row + M_P + 6], I[row + M_P + 7]
    lanes, v, per_tile = I[row + M_E], I[row + M_E + 1], I[row + M_E + 2]
    s0, s1, s2 = I[row + M_E + 3], I[row + M_E + 4], I[row + M_E + 5]
    fired, n_pipe, h = I[row + M_S], I[row + M_S + 1], I[row + M_S + 2]
    scr = I[H_SCR]
    lists = I[H_LIST]
    for i in range(I[row + M_IN0], I[row + M_IN1]):
        j = i - I[row + M_IN0]
        got = pop(I, F, I[lists + i], now, scr + j * w)
        if got == 1:
            for e in range(1, w):
                F[scr + j * w + e] = F[scr + j * w]
    vals = scr + n_ports * w
    n_tile = fired % v
    slot = (h + n_pipe) % lat
    out = I[H_MEM] + I[row + M_MEMB] + slot * w
    pinfo = I[H_PINFO]
    pval = I[H_PVAL]
    preserve = I[row + M_R] == 1
    for e in range(w):
        addr = n_tile * lanes + lane + e
        result = 0.0
        if addr < per_tile:
            x2 = addr % s2
            x1 = (addr // s2) % s1
            x0 = addr // (s2 * s1)
            for j in range(n_ports):
                q = pinfo + 6 * (p0 + j)
                y0, y1, y2 = x0 + I[q], x1 + I[q + 1], x2 + I[q + 2]
                if 0 <= y0 < s0 and 0 <= y1 < s1 and 0 <= y2 < s2:
                    F[vals + j] = F[scr + j * w + e]
                elif I[q + 3] == 0:
                    F[vals + j] = F[pval + p0 + j]
                elif I[q + 3] == 1:
                    F[vals + j] = F[scr + I[q + 4] * w + e]
                else:
                    F[vals + j] = 0.0
            result = evaluate(I, F, c0, c1, k0, vals)
            if preserve and not (
                I[row + M_R + 2] <= x0 < s0 - I[row + M_R + 5]
                and I[row + M_R + 3] <= x1 < s1 - I[row + M_R + 6]
                and I[row + M_R + 4] <= x2 < s2 - I[row + M_R + 7]
            ):
                result = F[scr + I[row + M_R + 1] * w + e]  # border: preserve keeps the input value
        F[out + e] = result
    I[I[H_PIPE] + I[row + M_E + 7] + slot] = now + lat
    I[row + M_S + 1] = n_pipe + 1
    I[row + M_S] = fired + 1


@njit(cache=True)
def _pe(I, F, m, now):
    """A PE group (SODA's k PEs of a stage; one PE elsewhere) works as one: its leader retires every
    lane's oldest result, then fires all lanes together when all can; other lanes report what the
    leader did for them."""
    row = mrow(I, m)
    if I[row + M_GROUP] == m:
        lists = I[H_LIST]
        for g in range(I[row + M_GRP0], I[row + M_GRP1]):
            q = I[lists + g]
            I[mrow(I, q) + M_S + 3] = _pe_retire(I, F, q, now)
        why = IDLE
        for g in range(I[row + M_GRP0], I[row + M_GRP1]):
            r = _pe_ready(I, I[lists + g], now)
            if r != IDLE:
                why = r
                break
        for g in range(I[row + M_GRP0], I[row + M_GRP1]):
            q = I[lists + g]
            if why == IDLE:
                _pe_fire(I, F, q, now)
                I[mrow(I, q) + M_FIRE] = BUSY
            else:
                I[mrow(I, q) + M_FIRE] = why
    act = I[row + M_S + 3]
    f = I[row + M_FIRE]
    if f == BUSY or act == BUSY:
        return BUSY
    if act == IDLE:
        return f
    return act


# ------------------------------------------------------------------------------------------ cycle loop


@njit(cache=True)
def run(I, F, trace, occupancy, trace_from, now0, limit):
    """Advance the design from cycle ``now0`` for at most ``limit`` cycles.

    ``trace`` / ``occupancy`` record each module's activity and each channel's beats at the end of the
    cycles from ``trace_from`` on (as many rows as they have). Returns (status, cycle reached, module
    firings); status is RUNNING, DONE or DEADLOCK.
    """
    n_mod = I[H_NMOD]
    n_bank = I[H_NBANK]
    firings = 0
    idle_cycles = 0
    now = now0
    end = now0 + limit
    trace_len = trace.shape[0]
    while now < end:
        # phase 1: refill — bandwidth credit of every bank
        for b in range(n_bank):
            bw = I[H_BW] + BWCOLS * b
            F[bw] = min(F[bw] + F[bw + 1], F[bw + 2])
            F[bw + 3] = F[bw + 4]  # bytes writers were refused last cycle: reserved for them now
            F[bw + 4] = 0.0
        progress = False
        waiting = False
        done = True
        # phase 2: evaluate every module against the start-of-cycle channel state (and fire it)
        for m in range(n_mod):
            row = mrow(I, m)
            k = I[row + M_KIND]
            if k == K_READER:
                act = _reader(I, F, m, now)
            elif k == K_WRITER:
                act = _writer(I, F, m, now)
                if act != FINISHED:
                    done = False
            elif k == K_BCAST:
                act = _bcast(I, F, m, now)
            elif k == K_FIFO:
                act = _fifo(I, F, m, now)
            elif k == K_TAP:
                act = _tap(I, F, m, now)
            elif k == K_WINDOW:
                act = _window(I, F, m, now)
            else:
                act = _pe(I, F, m, now)
                n_pipe = I[row + M_S + 1]
                if n_pipe > 0 and I[I[H_PIPE] + I[row + M_E + 7] + I[row + M_S + 2]] > now:
                    waiting = True  # a result in flight matures with time
            if act == WAIT_BW:
                waiting = True  # bandwidth credit accrues with time
                act = BLOCKED
            if act == BUSY:
                I[row + M_BUSY] += 1
                firings += 1
                progress = True
            elif act == STARVED:
                I[row + M_STARVED] += 1
            elif act == BLOCKED:
                I[row + M_BLOCKED] += 1
            t = now - trace_from
            if t >= 0 and t < trace_len:
                trace[t, m] = act
        # phase 3: commit is implicit (push/pop stamps); the cycle ends
        t = now - trace_from
        if t >= 0 and t < trace_len:
            for c in range(I[H_NCH]):
                occupancy[t, c] = I[I[H_CH] + c * CCOLS + C_COUNT]
        now += 1
        if done:
            return DONE, now, firings
        if progress or waiting:
            idle_cycles = 0
        else:
            idle_cycles += 1
            if idle_cycles >= 2:
                return DEADLOCK, now, firings
    return RUNNING, now, firings
