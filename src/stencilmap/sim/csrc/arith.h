/* Scalar arithmetic of the PEs, shared by the engine (engine.c) and the straight-line evaluators
 * engine.py generates per design: rounding to a type code (bytecode.TYPE_CODES), C and NumPy
 * operations, math functions. Results are bit-identical to the reference's (backends/ops.py) except
 * library functions (exp, sin, ...), which are within 1 ulp of NumPy's (bytecode.py). */
#ifndef STENCILMAP_ARITH_H
#define STENCILMAP_ARITH_H
#include <math.h>
#include <stdint.h>

typedef int64_t i64;
#define INLINE static inline __attribute__((always_inline))

INLINE double round_to(double x, i64 t) {
    if (t == 0) return x;
    if (t == 1 || t == 2) return (double)(float)x;
    if (t == 3) return x != 0.0 ? 1.0 : 0.0;
    if (isnan(x) || isinf(x)) return 0.0;
    double v = trunc(x);
    if (t == 7 || t == 11) return v; /* 64-bit: exact up to 2**53 (documented) */
    int bits = (t == 4 || t == 8) ? 8 : ((t == 5 || t == 9) ? 16 : 32);
    double span = ldexp(1.0, bits);
    v = v - span * floor(v / span);
    if (t <= 7 && v >= span / 2) v -= span;
    return v;
}

/* + - x of integer type code t, exact: computed in int64 (wrapping as C's unsigned arithmetic does) and
 * wrapped to t's width in integer arithmetic, so products beyond 2**53 stay exact. */
INLINE double int_arith(i64 op, double a, double b, i64 t) {
    uint64_t ia = (uint64_t)(i64)a, ib = (uint64_t)(i64)b, r;
    if (op == 0) r = ia + ib;
    else if (op == 1) r = ia - ib;
    else r = ia * ib;
    if (t == 7 || t == 11) return (double)(i64)r;
    int bits = (t == 4 || t == 8) ? 8 : ((t == 5 || t == 9) ? 16 : 32);
    i64 v = (i64)(r & ((UINT64_C(1) << bits) - 1));
    if (t <= 7 && v >= (INT64_C(1) << (bits - 1))) v -= INT64_C(1) << bits;
    return (double)v;
}

INLINE double binary(i64 op, double a, double b, int integer) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3:
        if (b == 0.0) {
            if (a == 0.0 || isnan(a)) return NAN;
            return copysign(INFINITY, a) * copysign(1.0, b);
        }
        return a / b;
    case 4: /* C integer division: truncation toward zero, x / 0 = 0 */
        if (b == 0.0) return 0.0;
        return trunc(a / b);
    case 5: /* C %: sign of the dividend, x % 0 = 0 */
        if (b == 0.0) return 0.0;
        return fmod(a, b);
    case 6: /* floor division */
        if (b == 0.0) {
            if (integer) return 0.0;
            return a == 0.0 ? NAN : copysign(INFINITY, a) * copysign(1.0, b);
        }
        return floor(a / b);
    case 7: { /* Python %: sign of the divisor */
        if (b == 0.0) return integer ? 0.0 : NAN;
        double r = fmod(a, b);
        if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
        return r;
    }
    case 8: return pow(a, b);
    case 9: return a == b ? 1.0 : 0.0;
    case 10: return a != b ? 1.0 : 0.0;
    case 11: return a < b ? 1.0 : 0.0;
    case 12: return a <= b ? 1.0 : 0.0;
    case 13: return a > b ? 1.0 : 0.0;
    case 14: return a >= b ? 1.0 : 0.0;
    case 15: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
    case 16: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
    case 17: return (double)((i64)a & (i64)b);
    case 18: return (double)((i64)a | (i64)b);
    default: return (double)((i64)a ^ (i64)b);
    }
}

INLINE double half_even(double x) {
    double r = floor(x + 0.5);
    if (r - x == 0.5 && fmod(r, 2.0) != 0.0) r -= 1.0;
    return r;
}

INLINE double call1(i64 f, double x) {
    switch (f) {
    case 0: return x >= 0 ? sqrt(x) : NAN;
    case 1: return copysign(pow(fabs(x), 1.0 / 3.0), x);
    case 2: return exp(x);
    case 3: return exp2(x);
    case 4: return expm1(x);
    case 5: case 6: case 7:
        if (x < 0) return NAN;
        if (x == 0) return -INFINITY;
        return f == 5 ? log(x) : (f == 6 ? log2(x) : log10(x));
    case 8: return x > -1 ? log1p(x) : (x == -1 ? -INFINITY : NAN);
    case 9: return sin(x);
    case 10: return cos(x);
    case 11: return tan(x);
    case 12: return fabs(x) <= 1 ? asin(x) : NAN;
    case 13: return fabs(x) <= 1 ? acos(x) : NAN;
    case 14: return atan(x);
    case 15: return sinh(x);
    case 16: return cosh(x);
    case 17: return tanh(x);
    case 18: return asinh(x);
    case 19: return x >= 1 ? acosh(x) : NAN;
    case 20: return fabs(x) < 1 ? atanh(x) : (fabs(x) == 1 ? copysign(INFINITY, x) : NAN);
    case 21: return fabs(x);
    case 22: return floor(x);
    case 23: return ceil(x);
    case 24: return trunc(x);
    case 25: case 29: return half_even(x); /* rint / round half to even */
    case 26: return erf(x);
    case 27: return erfc(x);
    default: return copysign(floor(fabs(x) + 0.5), x); /* 28: C round, half away from zero */
    }
}

INLINE double call2(i64 f, double a, double b) {
    switch (f) {
    case 100: return pow(a, b);
    case 101: return atan2(a, b);
    case 102: return hypot(a, b);
    case 103: return b != 0.0 ? fmod(a, b) : NAN;
    case 104: return isnan(a) ? b : (isnan(b) ? a : (b < a ? b : a));
    case 105: return isnan(a) ? b : (isnan(b) ? a : (b > a ? b : a));
    case 106: return copysign(a, b);
    default: { double d = a - b; return d > 0.0 ? d : 0.0; }
    }
}

INLINE double unary(i64 arg, double x, i64 t) {
    if (arg == 0) x = -x;
    else if (arg == 1) x = x == 0.0 ? 1.0 : 0.0;
    else x = (double)(~(i64)x);
    return round_to(x, t);
}

INLINE double binop(i64 arg, double a, double b, i64 t) {
    if (t >= 4 && arg <= 2) return int_arith(arg, a, b, t);
    return round_to(binary(arg, a, b, t >= 3), t);
}

INLINE double minmax(const double *s, i64 n, int is_max) {
    double acc = s[0];
    for (i64 j = 1; j < n; j++) {
        double v = s[j];
        if (isnan(acc) || isnan(v)) acc = NAN;
        else if (is_max ? (v > acc) : (v < acc)) acc = v;
    }
    return acc;
}

#endif
