"""The compiled cycle loop (Numba). Everything here works on the flat arrays ``model.SimModel`` builds.

Each cycle runs in named phases:

1. **refill** — every DRAM bank gains its bandwidth credit for the cycle;
2. **evaluate** — every module, in a fixed order, decides from the channel state at the *start* of the
   cycle whether it fires (inputs hold a beat, outputs have room, bandwidth is available) and does so;
3. **commit** — a channel's pops and pushes of this cycle become visible at the next one.

Commit is implicit in the channel representation: a channel remembers the cycle of its last push and
pop, and the evaluate phase discounts both (a token pushed this cycle is not yet visible to its
consumer, a slot freed this cycle not yet to its producer), which is exactly registered-FIFO timing
and makes the result independent of the module order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

# module kinds
K_READER, K_WRITER, K_BCAST, K_FIFO, K_TAP, K_WINDOW, K_PE = range(7)

# per-module integer parameters (columns of ``ip``)
P_A, P_B, P_C, P_D, P_E, P_F, P_G, P_H = range(8)
# per-module state (columns of ``st``)
S_0, S_1, S_2, S_3 = range(4)

# run status
RUNNING, DONE, DEADLOCK = 0, 1, 2

# module activity per cycle (trace codes)
IDLE, BUSY, STARVED, BLOCKED, FINISHED = 0, 1, 2, 3, 4


@njit(cache=True, inline="always")
def _avail(c: int, now: int, count: Any, push_at: Any) -> bool:
    n = count[c]
    if push_at[c] == now:
        n -= 1
    return n > 0


@njit(cache=True, inline="always")
def _room(c: int, now: int, count: Any, pop_at: Any, cap: Any) -> bool:
    n = count[c]
    if pop_at[c] == now:
        n += 1
    return n < cap[c]


@njit(cache=True, inline="always")
def _push(c: int, now: int, values: Any, vbase: int, count: Any, head: Any, cap: Any, width: Any,
          base: Any, store: Any, push_at: Any, peak: Any) -> None:  # fmt: skip
    slot = (head[c] + count[c]) % cap[c]
    at = base[c] + slot * width[c]
    for i in range(width[c]):
        store[at + i] = values[vbase + i]
    count[c] += 1
    push_at[c] = now
    if count[c] > peak[c]:
        peak[c] = count[c]


@njit(cache=True, inline="always")
def _pop(c: int, now: int, out: Any, obase: int, count: Any, head: Any, cap: Any, width: Any,
         base: Any, store: Any, pop_at: Any) -> None:  # fmt: skip
    at = base[c] + head[c] * width[c]
    for i in range(width[c]):
        out[obase + i] = store[at + i]
    head[c] = (head[c] + 1) % cap[c]
    count[c] -= 1
    pop_at[c] = now


@njit(cache=True)
def _round(x: float, t: int) -> float:
    if t == 0:
        return x
    if t == 1:
        return float(np.float32(x))
    if t == 2:
        return float(np.float32(x))  # half is computed as float (documented)
    if t == 3:
        return 1.0 if x != 0.0 else 0.0
    if math.isnan(x) or math.isinf(x):
        return 0.0
    v = math.trunc(x)
    if t == 4:
        bits, signed = 8, True
    elif t == 5:
        bits, signed = 16, True
    elif t == 6:
        bits, signed = 32, True
    elif t == 7:
        bits, signed = 64, True
    elif t == 8:
        bits, signed = 8, False
    elif t == 9:
        bits, signed = 16, False
    elif t == 10:
        bits, signed = 32, False
    else:
        bits, signed = 64, False
    if bits == 64:
        return v
    span = 2.0**bits
    v = v - span * math.floor(v / span)
    if signed and v >= span / 2:
        v -= span
    return v


@njit(cache=True)
def _binary(op: int, a: float, b: float, integer: bool) -> float:
    if op == 0:
        return a + b
    if op == 1:
        return a - b
    if op == 2:
        return a * b
    if op == 3:
        if b == 0.0:
            if a == 0.0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if op == 4:  # C integer division: truncation toward zero, x / 0 = 0
        if b == 0.0:
            return 0.0
        return float(math.trunc(a / b)) if abs(a) < 2.0**52 else math.trunc(a / b)
    if op == 5:  # C %: sign of the dividend, x % 0 = 0
        if b == 0.0:
            return 0.0
        return np.fmod(a, b)
    if op == 6:  # floor division
        if b == 0.0:
            return (
                0.0
                if integer
                else (math.nan if a == 0.0 else math.copysign(math.inf, a) * math.copysign(1.0, b))
            )
        return math.floor(a / b)
    if op == 7:  # Python %: sign of the divisor
        if b == 0.0:
            return 0.0 if integer else math.nan
        r = np.fmod(a, b)
        if r != 0.0 and (r < 0.0) != (b < 0.0):
            r += b
        return r
    if op == 8:
        return a**b
    if op == 9:
        return 1.0 if a == b else 0.0
    if op == 10:
        return 1.0 if a != b else 0.0
    if op == 11:
        return 1.0 if a < b else 0.0
    if op == 12:
        return 1.0 if a <= b else 0.0
    if op == 13:
        return 1.0 if a > b else 0.0
    if op == 14:
        return 1.0 if a >= b else 0.0
    if op == 15:
        return 1.0 if (a != 0.0 and b != 0.0) else 0.0
    if op == 16:
        return 1.0 if (a != 0.0 or b != 0.0) else 0.0
    ia, ib = np.int64(a), np.int64(b)
    if op == 17:
        return float(ia & ib)
    if op == 18:
        return float(ia | ib)
    return float(ia ^ ib)


@njit(cache=True)
def _call1(f: int, x: float) -> float:
    if f == 0:
        return math.sqrt(x) if x >= 0 else math.nan
    if f == 1:
        return math.copysign(abs(x) ** (1.0 / 3.0), x)
    if f == 2:
        return math.exp(x)
    if f == 3:
        return 2.0**x
    if f == 4:
        return math.expm1(x)
    if f == 5:
        return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)
    if f == 6:
        return math.log2(x) if x > 0 else (-math.inf if x == 0 else math.nan)
    if f == 7:
        return math.log10(x) if x > 0 else (-math.inf if x == 0 else math.nan)
    if f == 8:
        return math.log1p(x) if x > -1 else (-math.inf if x == -1 else math.nan)
    if f == 9:
        return math.sin(x)
    if f == 10:
        return math.cos(x)
    if f == 11:
        return math.tan(x)
    if f == 12:
        return math.asin(x) if abs(x) <= 1 else math.nan
    if f == 13:
        return math.acos(x) if abs(x) <= 1 else math.nan
    if f == 14:
        return math.atan(x)
    if f == 15:
        return math.sinh(x)
    if f == 16:
        return math.cosh(x)
    if f == 17:
        return math.tanh(x)
    if f == 18:
        return math.asinh(x)
    if f == 19:
        return math.acosh(x) if x >= 1 else math.nan
    if f == 20:
        return math.atanh(x) if abs(x) < 1 else (math.copysign(math.inf, x) if abs(x) == 1 else math.nan)
    if f == 21:
        return abs(x)
    if f == 22:
        return math.floor(x)
    if f == 23:
        return math.ceil(x)
    if f == 24:
        return float(math.trunc(x))
    if f == 25 or f == 29:
        r = math.floor(x + 0.5)
        if r - x == 0.5 and r % 2.0 != 0.0:
            r -= 1.0
        return r
    if f == 26:
        return math.erf(x)
    if f == 27:
        return math.erfc(x)
    return math.copysign(math.floor(abs(x) + 0.5), x)  # 28: C round, half away from zero


@njit(cache=True)
def _call2(f: int, a: float, b: float) -> float:
    if f == 100:
        return a**b
    if f == 101:
        return math.atan2(a, b)
    if f == 102:
        return math.hypot(a, b)
    if f == 103:
        return np.fmod(a, b) if b != 0.0 else math.nan
    if f == 104:
        return b if math.isnan(a) else (a if math.isnan(b) else min(a, b))
    if f == 105:
        return b if math.isnan(a) else (a if math.isnan(b) else max(a, b))
    if f == 106:
        return math.copysign(a, b)
    return max(a - b, 0.0)


@njit(cache=True)
def evaluate(code: Any, c0: int, c1: int, consts: Any, k0: int, ports: Any, p0: int, stack: Any,
             temps: Any) -> float:  # fmt: skip
    """Run bytecode ``code[c0:c1]`` with port values ``ports[p0:]``; returns the stencil's value."""
    sp = 0
    for i in range(c0, c1):
        op, arg, t = code[i, 0], code[i, 1], code[i, 2]
        integer = t >= 3
        if op == 0:
            stack[sp] = ports[p0 + arg]
            sp += 1
        elif op == 1:
            stack[sp] = consts[k0 + arg]
            sp += 1
        elif op == 2:
            stack[sp] = temps[arg]
            sp += 1
        elif op == 3:
            sp -= 1
            temps[arg] = stack[sp]
        elif op == 4:
            sp -= 1
            stack[sp - 1] = _round(_binary(arg, stack[sp - 1], stack[sp], integer), t)
        elif op == 5:
            x = stack[sp - 1]
            if arg == 0:
                x = -x
            elif arg == 1:
                x = 1.0 if x == 0.0 else 0.0
            else:
                x = float(~np.int64(x))
            stack[sp - 1] = _round(x, t)
        elif op == 6:
            if arg >= 108000:  # n-ary min / max
                n = arg % 1000
                is_max = arg // 1000 == 109
                acc = stack[sp - n]
                for j in range(sp - n + 1, sp):
                    v = stack[j]
                    if math.isnan(acc) or math.isnan(v):
                        acc = math.nan
                    elif (v > acc) if is_max else (v < acc):
                        acc = v
                sp -= n - 1
                stack[sp - 1] = _round(acc, t)
            elif arg == 200:
                sp -= 2
                stack[sp - 1] = _round(stack[sp - 1] * stack[sp] + stack[sp + 1], t)
            elif arg >= 100:
                sp -= 1
                stack[sp - 1] = _round(_call2(arg, stack[sp - 1], stack[sp]), t)
            else:
                stack[sp - 1] = _round(_call1(arg, stack[sp - 1]), t)
        elif op == 7:
            sp -= 2
            stack[sp - 1] = stack[sp] if stack[sp - 1] != 0.0 else stack[sp + 1]
        else:
            stack[sp - 1] = _round(stack[sp - 1], t)
    return stack[0]


@njit(cache=True)
def run_cycles(
    now0: int, limit: int,
    kind: Any, ip: Any, pe_ex: Any, pe_pres: Any, pe_hi0: Any, st: Any, fp: Any,
    in_ptr: Any, in_ch: Any, out_ptr: Any, out_ch: Any, out_x: Any,
    cap: Any, width: Any, count: Any, head: Any, base: Any, push_at: Any, pop_at: Any, peak: Any, store: Any,
    mem: Any, mem_base: Any, pipe_t: Any,
    streams: Any, dest: Any, output: Any,
    credit: Any, rate: Any, credit_cap: Any, moved: Any,
    code: Any, consts: Any, pinfo: Any, pval: Any,
    busy: Any, starved: Any, blocked: Any,
    group: Any, grp_ptr: Any, grp: Any, fire_state: Any,
    trace: Any, trace_from: int,
    scratch: Any, stack: Any, temps: Any,
) -> tuple[int, int, int]:  # fmt: skip
    """Advance the design from cycle ``now0`` for at most ``limit`` cycles.

    Returns (status, cycle reached, module firings); status is RUNNING, DONE or DEADLOCK.
    """
    n_mod = kind.shape[0]
    firings = 0
    idle_cycles = 0
    now = now0
    end = now0 + limit
    while now < end:
        # phase 1: refill — bandwidth credit of every bank
        for b in range(credit.shape[0]):
            credit[b] = min(credit[b] + rate[b], credit_cap[b])
        progress = False
        waiting = False
        done = True
        # phase 2: evaluate (and fire) every module against the start-of-cycle channel state
        for m in range(n_mod):
            k = kind[m]
            act = IDLE
            if k == K_READER:
                act = _reader(m, now, ip, st, fp, out_ptr, out_ch, cap, width, count, head, base, push_at,
                              pop_at, peak, store, streams, credit, moved, scratch)  # fmt: skip
                if act == BLOCKED and ip[m, P_D] >= 0 and credit[ip[m, P_D]] < credit_cap[ip[m, P_D]]:
                    waiting = True
            elif k == K_WRITER:
                act = _writer(m, now, ip, st, fp, in_ptr, in_ch, cap, width, count, head, base, push_at,
                              pop_at, store, dest, output, credit, moved, scratch)  # fmt: skip
                if act != FINISHED:
                    done = False
                if act == BLOCKED:
                    waiting = True
            elif k == K_BCAST:
                act = _bcast(m, now, in_ptr, in_ch, out_ptr, out_ch, cap, width, count, head, base, push_at,
                             pop_at, peak, store, scratch)  # fmt: skip
            elif k == K_FIFO:
                act = _fifo(m, now, ip, st, in_ptr, in_ch, out_ptr, out_ch, cap, width, count, head, base,
                            push_at, pop_at, peak, store, mem, mem_base, scratch)  # fmt: skip
            elif k == K_TAP:
                act = _tap(m, now, ip, st, in_ptr, in_ch, out_ptr, out_ch, cap, width, count, head, base,
                           push_at, pop_at, peak, store, scratch)  # fmt: skip
            elif k == K_WINDOW:
                act = _window(m, now, ip, st, in_ptr, in_ch, out_ptr, out_ch, out_x, cap, width, count, head,
                              base, push_at, pop_at, peak, store, mem, mem_base, scratch)  # fmt: skip
            else:
                act = _pe_retire(m, now, ip, pe_ex, st, out_ptr, out_ch, cap, width, count, head, base,
                                 push_at, pop_at, peak, store, mem, mem_base, pipe_t)  # fmt: skip
                if st[m, S_1] > 0 and pipe_t[pe_ex[m, 7] + st[m, S_2]] > now:
                    waiting = True  # a result in flight matures with time
                if group[m] == m:
                    # the lanes of a PE group (SODA's k PEs of a stage) fire together, as in hardware
                    why = IDLE
                    for g in range(grp_ptr[m], grp_ptr[m + 1]):
                        r = _pe_ready(grp[g], now, ip, pe_ex, st, in_ptr, in_ch, count, push_at)
                        if r != IDLE:
                            why = r
                            break
                    for g in range(grp_ptr[m], grp_ptr[m + 1]):
                        q = grp[g]
                        if why == IDLE:
                            _pe_fire(q, now, ip, pe_ex, pe_pres, pe_hi0, st, in_ptr, in_ch, cap, width, count, head, base,
                                     pop_at, store, mem, mem_base, pipe_t, code, consts, pinfo, pval, scratch,
                                     stack, temps)  # fmt: skip
                            fire_state[q] = BUSY
                        else:
                            fire_state[q] = why
                f = fire_state[m]
                if f == BUSY or act == BUSY:
                    act = BUSY
                elif act == IDLE:
                    act = f
            if act == BUSY:
                busy[m] += 1
                firings += 1
                progress = True
            elif act == STARVED:
                starved[m] += 1
            elif act == BLOCKED:
                blocked[m] += 1
            t = now - trace_from
            if 0 <= t < trace.shape[0]:
                trace[t, m] = act
        # phase 3: commit is implicit (push/pop stamps); the cycle ends
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


@njit(cache=True, inline="always")
def _outs_room(m: int, now: int, out_ptr: Any, out_ch: Any, count: Any, pop_at: Any, cap: Any) -> bool:
    for i in range(out_ptr[m], out_ptr[m + 1]):
        if not _room(out_ch[i], now, count, pop_at, cap):
            return False
    return True


@njit(cache=True, inline="always")
def _ins_avail(m: int, now: int, in_ptr: Any, in_ch: Any, count: Any, push_at: Any) -> bool:
    for i in range(in_ptr[m], in_ptr[m + 1]):
        if not _avail(in_ch[i], now, count, push_at):
            return False
    return True


@njit(cache=True)
def _reader(m, now, ip, st, fp, out_ptr, out_ch, cap, width, count, head, base, push_at, pop_at, peak, store,
            streams, credit, moved, scratch):  # fmt: skip
    pos, total, beat, bank = st[m, S_0], ip[m, P_B], ip[m, P_C], ip[m, P_D]
    if pos >= total:
        return FINISHED
    if not _outs_room(m, now, out_ptr, out_ch, count, pop_at, cap):
        return BLOCKED
    cost = fp[m, 0] * beat
    if bank >= 0 and credit[bank] < cost:
        return BLOCKED
    if bank >= 0:
        credit[bank] -= cost
    moved[m] += cost
    at = ip[m, P_A] + pos
    for i in range(out_ptr[m], out_ptr[m + 1]):
        c = out_ch[i]
        _push(c, now, streams, at, count, head, cap, width, base, store, push_at, peak)
        at += width[c]
    st[m, S_0] = pos + beat
    return BUSY


@njit(cache=True)
def _writer(m, now, ip, st, fp, in_ptr, in_ch, cap, width, count, head, base, push_at, pop_at, store, dest,
            output, credit, moved, scratch):  # fmt: skip
    pos, total, beat, bank = st[m, S_0], ip[m, P_B], ip[m, P_C], ip[m, P_D]
    if pos >= total:
        return FINISHED
    if not _ins_avail(m, now, in_ptr, in_ch, count, push_at):
        return STARVED
    at = ip[m, P_A] + pos
    stored = 0
    for i in range(beat):
        if dest[at + i] >= 0:
            stored += 1
    cost = fp[m, 0] * stored
    if bank >= 0 and credit[bank] < cost:
        return BLOCKED
    if bank >= 0:
        credit[bank] -= cost
    moved[m] += cost
    o = 0
    for i in range(in_ptr[m], in_ptr[m + 1]):
        c = in_ch[i]
        _pop(c, now, scratch, o, count, head, cap, width, base, store, pop_at)
        o += width[c]
    for i in range(beat):
        d = dest[at + i]
        if d >= 0:
            output[d] = scratch[i]
    st[m, S_0] = pos + beat
    return BUSY


@njit(cache=True)
def _bcast(m, now, in_ptr, in_ch, out_ptr, out_ch, cap, width, count, head, base, push_at, pop_at, peak, store,
           scratch):  # fmt: skip
    c_in = in_ch[in_ptr[m]]
    if not _avail(c_in, now, count, push_at):
        return STARVED
    if not _outs_room(m, now, out_ptr, out_ch, count, pop_at, cap):
        return BLOCKED
    _pop(c_in, now, scratch, 0, count, head, cap, width, base, store, pop_at)
    for i in range(out_ptr[m], out_ptr[m + 1]):
        _push(out_ch[i], now, scratch, 0, count, head, cap, width, base, store, push_at, peak)
    return BUSY


@njit(cache=True)
def _fifo(m, now, ip, st, in_ptr, in_ch, out_ptr, out_ch, cap, width, count, head, base, push_at, pop_at, peak,
          store, mem, mem_base, scratch):  # fmt: skip
    depth, w = ip[m, P_A], ip[m, P_B]
    n, h = st[m, S_0], st[m, S_1]
    c_in, c_out = in_ch[in_ptr[m]], out_ch[out_ptr[m]]
    fired = False
    if n > 0 and _room(c_out, now, count, pop_at, cap):
        _push(c_out, now, mem, mem_base[m] + h * w, count, head, cap, width, base, store, push_at, peak)
        st[m, S_1] = (h + 1) % depth
        st[m, S_0] -= 1
        fired = True
    if st[m, S_0] < depth and _avail(c_in, now, count, push_at):  # a slot freed this cycle is reusable
        n, h = st[m, S_0], st[m, S_1]
        slot = (h + n) % depth
        _pop(c_in, now, mem, mem_base[m] + slot * w, count, head, cap, width, base, store, pop_at)
        st[m, S_0] += 1
        fired = True
    if fired:
        return BUSY
    return STARVED if n == 0 else BLOCKED


@njit(cache=True)
def _tap(m, now, ip, st, in_ptr, in_ch, out_ptr, out_ch, cap, width, count, head, base, push_at, pop_at, peak,
         store, scratch):  # fmt: skip
    """A SODA forwarding tap at chain offset x: passes every element of its lane down the chain (``next``)
    and sends to the PEs (every other output), at PE firing n, element n + s of the lane
    (s = (x − r)/k; placeholders outside the tile)."""
    s, v, c_next, tiles = ip[m, P_A], ip[m, P_B], ip[m, P_D], ip[m, P_E]
    recv, sent = st[m, S_0], st[m, S_1]
    if recv >= v and sent >= v:
        if st[m, S_2] + 1 >= tiles:
            return FINISHED
        st[m, S_2] += 1
        st[m, S_0] = 0
        st[m, S_1] = 0
        recv, sent = 0, 0
    want = sent + s  # lane element the next PE token carries
    outs_room = _outs_room(m, now, out_ptr, out_ch, count, pop_at, cap)
    act = IDLE
    # a placeholder (before the lane's first element or after its last) needs no input
    if sent < v and (want < 0 or (want >= v and recv >= v)):
        if not outs_room:
            act = BLOCKED
        else:
            scratch[0] = 0.0
            for i in range(out_ptr[m], out_ptr[m + 1]):
                _push(out_ch[i], now, scratch, 0, count, head, cap, width, base, store, push_at, peak)
            st[m, S_1] = sent + 1
            return BUSY
    if recv >= v:
        return act if act != IDLE else STARVED
    # pass the next element down; it goes to the PEs too when it is the one they need next
    emit = sent < v and want == recv
    if emit and act == BLOCKED:
        return BLOCKED
    c_in = in_ch[in_ptr[m]]
    if not _avail(c_in, now, count, push_at):
        return STARVED if act == IDLE else act
    if (c_next >= 0 and not _room(c_next, now, count, pop_at, cap)) or (emit and not outs_room):
        return BLOCKED
    if not emit and want < 0 and recv >= 0 and c_next < 0:
        return act  # the last tap keeps its element until its placeholders are out
    _pop(c_in, now, scratch, 0, count, head, cap, width, base, store, pop_at)
    if c_next >= 0:
        _push(c_next, now, scratch, 0, count, head, cap, width, base, store, push_at, peak)
    if emit:
        for i in range(out_ptr[m], out_ptr[m + 1]):
            _push(out_ch[i], now, scratch, 0, count, head, cap, width, base, store, push_at, peak)
        st[m, S_1] = sent + 1
    st[m, S_0] = recv + 1
    return BUSY


@njit(cache=True)
def _window(m, now, ip, st, in_ptr, in_ch, out_ptr, out_ch, out_x, cap, width, count, head, base, push_at,
            pop_at, peak, store, mem, mem_base, scratch):  # fmt: skip
    """A window buffer (StencilFlow internal buffer, PCM shift register): output o carries, at firing n,
    elements n·P + x_o + [0, w_o) of the stream; it stores at most ``size`` elements."""
    p, v, size, x_min, x_hi, per_tile, ring = ip[m, P_A], ip[m, P_B], ip[m, P_C], ip[m, P_D], ip[m, P_E], \
        ip[m, P_F], ip[m, P_G]  # fmt: skip
    recv, fired = st[m, S_0], st[m, S_1]
    if fired >= v and recv >= per_tile:
        if st[m, S_2] + 1 >= ip[m, P_H]:
            return FINISHED
        st[m, S_2] += 1
        st[m, S_0] = 0
        st[m, S_1] = 0
        recv, fired = 0, 0
    mb = mem_base[m]
    act = IDLE
    # fire: every needed element has arrived (or lies beyond the tile)
    if fired < v:
        need = min(per_tile, fired * p + x_hi)
        if recv >= need:
            if _outs_room(m, now, out_ptr, out_ch, count, pop_at, cap):
                for i in range(out_ptr[m], out_ptr[m + 1]):
                    c = out_ch[i]
                    first = fired * p + out_x[i]
                    for e in range(width[c]):
                        a = first + e
                        scratch[e] = mem[mb + a % ring] if 0 <= a < per_tile else 0.0
                    _push(c, now, scratch, 0, count, head, cap, width, base, store, push_at, peak)
                st[m, S_1] = fired + 1
                act = BUSY
            else:
                act = BLOCKED
        else:
            act = STARVED
    # accept a beat when the elements still needed fit in the buffer
    if recv < per_tile:
        oldest = max(0, st[m, S_1] * p + x_min)  # what a firing this cycle consumed is free again
        if recv + p - oldest <= size and _ins_avail(m, now, in_ptr, in_ch, count, push_at):
            o = 0
            for i in range(in_ptr[m], in_ptr[m + 1]):
                c = in_ch[i]
                _pop(c, now, scratch, o, count, head, cap, width, base, store, pop_at)
                o += width[c]
            for e in range(p):
                mem[mb + (recv + e) % ring] = scratch[e]
            st[m, S_0] = recv + p
            act = BUSY
    return act


@njit(cache=True)
def _pe_retire(m, now, ip, pe_ex, st, out_ptr, out_ch, cap, width, count, head, base, push_at, pop_at, peak,
               store, mem, mem_base, pipe_t):  # fmt: skip
    """Send the oldest result on when it has matured and the output has room (II = 1 pipeline)."""
    lat, w, pb = ip[m, P_F], ip[m, P_H], pe_ex[m, 7]
    n_pipe, h = st[m, S_1], st[m, S_2]
    if n_pipe == 0 or pipe_t[pb + h] > now:
        return IDLE
    c_out = out_ch[out_ptr[m]]
    if not _room(c_out, now, count, pop_at, cap):
        return BLOCKED
    _push(c_out, now, mem, mem_base[m] + h * w, count, head, cap, width, base, store, push_at, peak)
    st[m, S_2] = (h + 1) % lat
    st[m, S_1] = n_pipe - 1
    return BUSY


@njit(cache=True)
def _pe_ready(m, now, ip, pe_ex, st, in_ptr, in_ch, count, push_at):
    """IDLE when the PE can fire now, else why not (FINISHED, BLOCKED on a full pipeline, STARVED)."""
    if st[m, S_0] >= pe_ex[m, 1] * pe_ex[m, 6]:
        return FINISHED
    if st[m, S_1] >= ip[m, P_F]:
        return BLOCKED
    if not _ins_avail(m, now, in_ptr, in_ch, count, push_at):
        return STARVED
    return IDLE


@njit(cache=True)
def _pe_fire(m, now, ip, pe_ex, pe_pres, pe_hi0, st, in_ptr, in_ch, cap, width, count, head, base, pop_at, store, mem,
             mem_base, pipe_t, code, consts, pinfo, pval, scratch, stack, temps):  # fmt: skip
    """Consume one beat per port, evaluate the stencil for the lane's point(s), enter the pipeline."""
    c0, c1, k0, p0, n_ports, lat, lane, w = ip[m, P_A], ip[m, P_B], ip[m, P_C], ip[m, P_D], ip[m, P_E], \
        ip[m, P_F], ip[m, P_G], ip[m, P_H]  # fmt: skip
    lanes, v, per_tile, s0, s1, s2, pb = pe_ex[m, 0], pe_ex[m, 1], pe_ex[m, 2], pe_ex[m, 3], \
        pe_ex[m, 4], pe_ex[m, 5], pe_ex[m, 7]  # fmt: skip
    fired, n_pipe, h = st[m, S_0], st[m, S_1], st[m, S_2]
    mb = mem_base[m]
    for i in range(in_ptr[m], in_ptr[m + 1]):
        j = i - in_ptr[m]
        _pop(in_ch[i], now, scratch, j * w, count, head, cap, width, base, store, pop_at)
        if width[in_ch[i]] == 1 and w > 1:
            for e in range(1, w):
                scratch[j * w + e] = scratch[j * w]
    n_tile = fired % v
    slot = (h + n_pipe) % lat
    vals = scratch[n_ports * w :]
    for e in range(w):
        addr = n_tile * lanes + lane + e
        result = 0.0
        if addr < per_tile:
            x2 = addr % s2
            x1 = (addr // s2) % s1
            x0 = addr // (s2 * s1)
            for j in range(n_ports):
                q = p0 + j
                y0, y1, y2 = x0 + pinfo[q, 0], x1 + pinfo[q, 1], x2 + pinfo[q, 2]
                raw = scratch[j * w + e]
                if 0 <= y0 < s0 and 0 <= y1 < s1 and 0 <= y2 < s2:
                    vals[j] = raw
                elif pinfo[q, 3] == 0:
                    vals[j] = pval[q]
                elif pinfo[q, 3] == 1:
                    vals[j] = scratch[pinfo[q, 4] * w + e]
                else:
                    vals[j] = 0.0
            result = evaluate(code, c0, c1, consts, k0, vals, 0, stack, temps)
            if pe_pres[m, 0] == 1 and not (
                pe_pres[m, 2] <= x0 < s0 - pe_hi0[m]
                and pe_pres[m, 3] <= x1 < s1 - pe_pres[m, 5]
                and pe_pres[m, 4] <= x2 < s2 - pe_pres[m, 6]
            ):
                result = scratch[pe_pres[m, 1] * w + e]  # border: preserve keeps the input value
        mem[mb + slot * w + e] = result
    pipe_t[pb + slot] = now + lat
    st[m, S_1] = n_pipe + 1
    st[m, S_0] = fired + 1
