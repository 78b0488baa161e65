"""Scalar arithmetic of the PEs (Numba): rounding to a type code, C and NumPy operations, math
functions, and the stack machine that runs a stencil's bytecode (``bytecode.py``) for one point."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from stencilmap.sim.memory import H_CODE, H_CONST, H_STACK, H_TEMPS


@njit(cache=True)
def round_to(x, t):
    """Round a value to type code t (see ``bytecode.TYPE_CODES``): float32 rounding, integer wrap."""
    if t == 0:
        return x
    if t == 1 or t == 2:
        return float(np.float32(x))
    if t == 3:
        return 1.0 if x != 0.0 else 0.0
    if math.isnan(x) or math.isinf(x):
        return 0.0
    v = float(math.trunc(x))
    if t == 7 or t == 11:
        return v  # 64-bit: exact up to 2**53 (documented)
    bits = 8 if (t == 4 or t == 8) else (16 if (t == 5 or t == 9) else 32)
    span = 2.0**bits
    v = v - span * math.floor(v / span)
    if t <= 7 and v >= span / 2:
        v -= span
    return v


@njit(cache=True)
def int_arith(op, a, b, t):
    """+ − × of integer type code t, exact: computed in int64 (wrapping as C's unsigned arithmetic does)
    and wrapped to t's width in integer arithmetic, so products beyond 2**53 stay exact."""
    ia, ib = np.int64(a), np.int64(b)
    if op == 0:
        r = ia + ib
    elif op == 1:
        r = ia - ib
    else:
        r = ia * ib
    if t == 7 or t == 11:
        return float(r)
    bits = 8 if (t == 4 or t == 8) else (16 if (t == 5 or t == 9) else 32)
    mask = (np.int64(1) << bits) - 1
    r = r & mask
    if t <= 7 and r >= (np.int64(1) << (bits - 1)):
        r -= np.int64(1) << bits
    return float(r)


@njit(cache=True)
def binary(op, a, b, integer):
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
        return float(math.trunc(a / b))
    if op == 5:  # C %: sign of the dividend, x % 0 = 0
        if b == 0.0:
            return 0.0
        return np.fmod(a, b)
    if op == 6:  # floor division
        if b == 0.0:
            if integer:
                return 0.0
            return math.nan if a == 0.0 else math.copysign(math.inf, a) * math.copysign(1.0, b)
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
def call1(f, x):
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
    if f in (5, 6, 7):
        if x < 0:
            return math.nan
        if x == 0:
            return -math.inf
        return math.log(x) if f == 5 else (math.log2(x) if f == 6 else math.log10(x))
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
    if f == 25 or f == 29:  # rint / round half to even
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
def call2(f, a, b):
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
def evaluate(I, F, c0, c1, k0, vals):
    """Run bytecode instructions [c0, c1) with port values at F[vals:]; returns the stencil's value."""
    code = I[H_CODE]
    stack = I[H_STACK]
    temps = I[H_TEMPS]
    consts = I[H_CONST] + k0
    sp = stack
    for i in range(c0, c1):
        at = code + 3 * i
        op, arg, t = I[at], I[at + 1], I[at + 2]
        if op == 0:
            F[sp] = F[vals + arg]
            sp += 1
        elif op == 1:
            F[sp] = F[consts + arg]
            sp += 1
        elif op == 2:
            F[sp] = F[temps + arg]
            sp += 1
        elif op == 3:
            sp -= 1
            F[temps + arg] = F[sp]
        elif op == 4:
            sp -= 1
            if t >= 4 and arg <= 2:
                F[sp - 1] = int_arith(arg, F[sp - 1], F[sp], t)
            else:
                F[sp - 1] = round_to(binary(arg, F[sp - 1], F[sp], t >= 3), t)
        elif op == 5:
            x = F[sp - 1]
            if arg == 0:
                x = -x
            elif arg == 1:
                x = 1.0 if x == 0.0 else 0.0
            else:
                x = float(~np.int64(x))
            F[sp - 1] = round_to(x, t)
        elif op == 6:
            if arg >= 108000:  # n-ary min / max
                n = arg % 1000
                is_max = arg // 1000 == 109
                acc = F[sp - n]
                for j in range(sp - n + 1, sp):
                    v = F[j]
                    if math.isnan(acc) or math.isnan(v):
                        acc = math.nan
                    elif (v > acc) if is_max else (v < acc):
                        acc = v
                sp -= n - 1
                F[sp - 1] = round_to(acc, t)
            elif arg == 200:
                sp -= 2
                F[sp - 1] = round_to(F[sp - 1] * F[sp] + F[sp + 1], t)
            elif arg >= 100:
                sp -= 1
                F[sp - 1] = round_to(call2(arg, F[sp - 1], F[sp]), t)
            else:
                F[sp - 1] = round_to(call1(arg, F[sp - 1]), t)
        elif op == 7:
            sp -= 2
            F[sp - 1] = F[sp] if F[sp - 1] != 0.0 else F[sp + 1]
        else:
            F[sp - 1] = round_to(F[sp - 1], t)
    return F[stack]
