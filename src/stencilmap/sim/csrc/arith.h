/* Scalar arithmetic of the PEs, shared by the engine (engine.c) and the straight-line evaluators
 * engine.py generates per design: rounding to a type code (bytecode.TYPE_CODES), C and NumPy
 * operations, math functions. Results are bit-identical to the reference's (backends/ops.py) except
 * library functions (exp, sin, ...), which are within 1 ulp of NumPy's (bytecode.py). */
#ifndef STENCILMAP_ARITH_H
#define STENCILMAP_ARITH_H
#include <math.h>
#include <stdint.h>

/* BEGIN bytecode.c_defines(): the instruction set, generated from sim/bytecode.py (a test checks it) */
#define SM_OP_LOAD_PORT 0
#define SM_OP_LOAD_CONST 1
#define SM_OP_LOAD_TEMP 2
#define SM_OP_STORE_TEMP 3
#define SM_OP_BINARY 4
#define SM_OP_UNARY 5
#define SM_OP_CALL 6
#define SM_OP_SELECT 7
#define SM_OP_ROUND 8
#define SM_T_FLOAT64 0
#define SM_T_FLOAT32 1
#define SM_T_FLOAT16 2
#define SM_T_BOOL 3
#define SM_T_INT8 4
#define SM_T_INT16 5
#define SM_T_INT32 6
#define SM_T_INT64 7
#define SM_T_UINT8 8
#define SM_T_UINT16 9
#define SM_T_UINT32 10
#define SM_T_UINT64 11
#define SM_BIN_ADD 0
#define SM_BIN_SUB 1
#define SM_BIN_MUL 2
#define SM_BIN_DIV 3
#define SM_BIN_DIV_TRUNC 4
#define SM_BIN_MOD_C 5
#define SM_BIN_FLOORDIV 6
#define SM_BIN_MOD_PY 7
#define SM_BIN_POW 8
#define SM_BIN_EQ 9
#define SM_BIN_NE 10
#define SM_BIN_LT 11
#define SM_BIN_LE 12
#define SM_BIN_GT 13
#define SM_BIN_GE 14
#define SM_BIN_LAND 15
#define SM_BIN_LOR 16
#define SM_BIN_BAND 17
#define SM_BIN_BOR 18
#define SM_BIN_BXOR 19
#define SM_UN_NEG 0
#define SM_UN_LNOT 1
#define SM_UN_INV 2
#define SM_FN_SQRT 0
#define SM_FN_CBRT 1
#define SM_FN_EXP 2
#define SM_FN_EXP2 3
#define SM_FN_EXPM1 4
#define SM_FN_LOG 5
#define SM_FN_LOG2 6
#define SM_FN_LOG10 7
#define SM_FN_LOG1P 8
#define SM_FN_SIN 9
#define SM_FN_COS 10
#define SM_FN_TAN 11
#define SM_FN_ASIN 12
#define SM_FN_ACOS 13
#define SM_FN_ATAN 14
#define SM_FN_SINH 15
#define SM_FN_COSH 16
#define SM_FN_TANH 17
#define SM_FN_ASINH 18
#define SM_FN_ACOSH 19
#define SM_FN_ATANH 20
#define SM_FN_FABS 21
#define SM_FN_FLOOR 22
#define SM_FN_CEIL 23
#define SM_FN_TRUNC 24
#define SM_FN_RINT 25
#define SM_FN_ERF 26
#define SM_FN_ERFC 27
#define SM_FN_ROUND_HALF_AWAY 28
#define SM_FN_ROUND_EVEN 29
#define SM_FN_POW 100
#define SM_FN_ATAN2 101
#define SM_FN_HYPOT 102
#define SM_FN_FMOD 103
#define SM_FN_FMIN 104
#define SM_FN_FMAX 105
#define SM_FN_COPYSIGN 106
#define SM_FN_FDIM 107
#define SM_FN_MIN_NAN 108
#define SM_FN_MAX_NAN 109
#define SM_FN_FMA_UNFUSED 200
#define SM_FN_BINARY 100
#define SM_FN_NARY 1000
/* END bytecode.c_defines() */

typedef int64_t i64;
#define INLINE static inline __attribute__((always_inline))

/* the width of an 8/16/32-bit integer type code, and whether a type code is a signed integer */
#define SM_INT_BITS(t) (((t) == SM_T_INT8 || (t) == SM_T_UINT8) ? 8 : (((t) == SM_T_INT16 || (t) == SM_T_UINT16) ? 16 : 32))
#define SM_SIGNED(t) ((t) >= SM_T_INT8 && (t) <= SM_T_INT64)

/* x rounded to float16, to nearest even (NumPy's cast): the compiler's _Float16 where it has one, else
 * the same in doubles (an 11-bit significand, subnormals below 2^-14, inf beyond 65504) */
#if defined(__FLT16_MANT_DIG__) && !defined(SM_SOFT_HALF)
INLINE double round_half(double x) { return (double)(_Float16)x; }
#else
static double round_half(double x) {
    if (x == 0.0 || isnan(x) || isinf(x)) return x;
    int e;
    frexp(x, &e);
    int q = e - 11 < -24 ? -24 : e - 11; /* the exponent of x's ulp in float16 */
    double r = ldexp(rint(ldexp(x, -q)), q); /* exact scaling; rint rounds half to even */
    return fabs(r) > 65504.0 ? copysign(INFINITY, x) : r;
}
#endif

INLINE double round_to(double x, i64 t) {
    if (t == SM_T_FLOAT64) return x;
    if (t == SM_T_FLOAT32) return (double)(float)x;
    if (t == SM_T_FLOAT16) return round_half(x);
    if (t == SM_T_BOOL) return x != 0.0 ? 1.0 : 0.0;
    if (isnan(x) || isinf(x)) return 0.0;
    double v = trunc(x);
    if (t == SM_T_INT64 || t == SM_T_UINT64) return v; /* 64-bit: exact up to 2**53 (documented) */
    int bits = SM_INT_BITS(t);
    double span = ldexp(1.0, bits);
    v = v - span * floor(v / span);
    if (SM_SIGNED(t) && v >= span / 2) v -= span;
    return v;
}

/* + - x and ** of integer type code t, exact: computed in int64 (wrapping as C's unsigned arithmetic does) and
 * wrapped to t's width in integer arithmetic, so products beyond 2**53 stay exact. */
INLINE double int_arith(i64 op, double a, double b, i64 t) {
    uint64_t ia = (uint64_t)(i64)a, ib = (uint64_t)(i64)b, r;
    if (op == SM_BIN_ADD) r = ia + ib;
    else if (op == SM_BIN_SUB) r = ia - ib;
    else if (op == SM_BIN_MUL) r = ia * ib;
    else if (b < 0.0) r = 0; /* SM_BIN_POW: a negative exponent gives 0 */
    else for (r = 1, ib = (uint64_t)b; ib; ib >>= 1, ia *= ia) /* by squaring, wrapping */
        if (ib & 1) r *= ia;
    if (t == SM_T_INT64 || t == SM_T_UINT64) return (double)(i64)r;
    int bits = SM_INT_BITS(t);
    i64 v = (i64)(r & ((UINT64_C(1) << bits) - 1));
    if (SM_SIGNED(t) && v >= (INT64_C(1) << (bits - 1))) v -= INT64_C(1) << bits;
    return (double)v;
}

/* NumPy's floor division (want_div) and modulo of floats: npy_divmod (numpy/_core/src/npymath/
 * npy_math_internal.h), in float for float32 and float16 values (NumPy's half divmod works in float) and
 * in double otherwise, so bit-identical to the reference (scalar.helpers prints the same algorithm). */
#define SM_DIVMOD(NAME, F, FMOD, FLOOR, COPYSIGN)                                                        \
    INLINE double NAME(double da, double db, int want_div) {                                              \
        F a = (F)da, b = (F)db;                                                                           \
        F mod = FMOD(a, b);                                                                               \
        if (b == 0) return want_div ? (double)(a / b) : (double)mod;                                      \
        F div = (a - mod) / b;                                                                            \
        if (mod != 0) {                                                                                   \
            if ((b < 0) != (mod < 0)) {                                                                   \
                mod += b;                                                                                 \
                div -= (F)1;                                                                              \
            }                                                                                             \
        } else {                                                                                          \
            mod = COPYSIGN((F)0, b);                                                                      \
        }                                                                                                 \
        if (!want_div) return (double)mod;                                                                \
        F fd;                                                                                             \
        if (div != 0) {                                                                                   \
            fd = FLOOR(div);                                                                              \
            if (div - fd > (F)0.5) fd += (F)1;                                                            \
        } else {                                                                                          \
            fd = COPYSIGN((F)0, a / b);                                                                   \
        }                                                                                                 \
        return (double)fd;                                                                                \
    }
SM_DIVMOD(divmod_f32, float, fmodf, floorf, copysignf)
SM_DIVMOD(divmod_f64, double, fmod, floor, copysign)

INLINE double binary(i64 op, double a, double b, i64 t) {
    int integer = t >= SM_T_BOOL;
    switch (op) {
    case SM_BIN_ADD: return a + b;
    case SM_BIN_SUB: return a - b;
    case SM_BIN_MUL: return a * b;
    case SM_BIN_DIV:
        if (b == 0.0) {
            if (a == 0.0 || isnan(a)) return NAN;
            return copysign(INFINITY, a) * copysign(1.0, b);
        }
        return a / b;
    case SM_BIN_DIV_TRUNC: /* C integer division: truncation toward zero, x / 0 = 0 */
        if (b == 0.0) return 0.0;
        return trunc(a / b);
    case SM_BIN_MOD_C: /* C %: sign of the dividend, x % 0 = 0 */
        if (b == 0.0) return 0.0;
        return fmod(a, b);
    case SM_BIN_FLOORDIV: /* floor division */
        if (!integer) return t == SM_T_FLOAT64 ? divmod_f64(a, b, 1) : divmod_f32(a, b, 1);
        if (b == 0.0) return 0.0;
        return floor(a / b);
    case SM_BIN_MOD_PY: { /* Python %: sign of the divisor */
        if (!integer) return t == SM_T_FLOAT64 ? divmod_f64(a, b, 0) : divmod_f32(a, b, 0);
        if (b == 0.0) return 0.0;
        double r = fmod(a, b);
        if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
        return r;
    }
    case SM_BIN_POW: return pow(a, b);
    case SM_BIN_EQ: return a == b ? 1.0 : 0.0;
    case SM_BIN_NE: return a != b ? 1.0 : 0.0;
    case SM_BIN_LT: return a < b ? 1.0 : 0.0;
    case SM_BIN_LE: return a <= b ? 1.0 : 0.0;
    case SM_BIN_GT: return a > b ? 1.0 : 0.0;
    case SM_BIN_GE: return a >= b ? 1.0 : 0.0;
    case SM_BIN_LAND: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
    case SM_BIN_LOR: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
    case SM_BIN_BAND: return (double)((i64)a & (i64)b);
    case SM_BIN_BOR: return (double)((i64)a | (i64)b);
    default: return (double)((i64)a ^ (i64)b); /* SM_BIN_BXOR */
    }
}

INLINE double half_even(double x) {
    double r = floor(x + 0.5);
    if (r - x == 0.5 && fmod(r, 2.0) != 0.0) r -= 1.0;
    return r;
}

INLINE double call1(i64 f, double x) {
    switch (f) {
    case SM_FN_SQRT: return x >= 0 ? sqrt(x) : NAN;
    case SM_FN_CBRT: return copysign(pow(fabs(x), 1.0 / 3.0), x);
    case SM_FN_EXP: return exp(x);
    case SM_FN_EXP2: return exp2(x);
    case SM_FN_EXPM1: return expm1(x);
    case SM_FN_LOG: case SM_FN_LOG2: case SM_FN_LOG10:
        if (x < 0) return NAN;
        if (x == 0) return -INFINITY;
        return f == SM_FN_LOG ? log(x) : (f == SM_FN_LOG2 ? log2(x) : log10(x));
    case SM_FN_LOG1P: return x > -1 ? log1p(x) : (x == -1 ? -INFINITY : NAN);
    case SM_FN_SIN: return sin(x);
    case SM_FN_COS: return cos(x);
    case SM_FN_TAN: return tan(x);
    case SM_FN_ASIN: return fabs(x) <= 1 ? asin(x) : NAN;
    case SM_FN_ACOS: return fabs(x) <= 1 ? acos(x) : NAN;
    case SM_FN_ATAN: return atan(x);
    case SM_FN_SINH: return sinh(x);
    case SM_FN_COSH: return cosh(x);
    case SM_FN_TANH: return tanh(x);
    case SM_FN_ASINH: return asinh(x);
    case SM_FN_ACOSH: return x >= 1 ? acosh(x) : NAN;
    case SM_FN_ATANH: return fabs(x) < 1 ? atanh(x) : (fabs(x) == 1 ? copysign(INFINITY, x) : NAN);
    case SM_FN_FABS: return fabs(x);
    case SM_FN_FLOOR: return floor(x);
    case SM_FN_CEIL: return ceil(x);
    case SM_FN_TRUNC: return trunc(x);
    case SM_FN_RINT: case SM_FN_ROUND_EVEN: return half_even(x); /* rint / round half to even */
    case SM_FN_ERF: return erf(x);
    case SM_FN_ERFC: return erfc(x);
    default: return copysign(floor(fabs(x) + 0.5), x); /* SM_FN_ROUND_HALF_AWAY: C round */
    }
}

INLINE double call2(i64 f, double a, double b) {
    switch (f) {
    case SM_FN_POW: return pow(a, b);
    case SM_FN_ATAN2: return atan2(a, b);
    case SM_FN_HYPOT: return hypot(a, b);
    case SM_FN_FMOD: return b != 0.0 ? fmod(a, b) : NAN;
    case SM_FN_FMIN: return isnan(a) ? b : (isnan(b) ? a : (b < a ? b : a));
    case SM_FN_FMAX: return isnan(a) ? b : (isnan(b) ? a : (b > a ? b : a));
    case SM_FN_COPYSIGN: return copysign(a, b);
    default: { /* SM_FN_FDIM: max_nan(a - b, 0), as the reference (NaN, inf - inf included) */
        double d = a - b;
        return (d > 0.0 || isnan(d)) ? d : 0.0;
    }
    }
}

INLINE double unary(i64 arg, double x, i64 t) {
    if (arg == SM_UN_NEG) x = -x;
    else if (arg == SM_UN_LNOT) x = x == 0.0 ? 1.0 : 0.0;
    else x = (double)(~(i64)x);
    return round_to(x, t);
}

INLINE double binop(i64 arg, double a, double b, i64 t) {
    if (t >= SM_T_INT8 && (arg <= SM_BIN_MUL || arg == SM_BIN_POW)) return int_arith(arg, a, b, t);
    return round_to(binary(arg, a, b, t), t);
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
