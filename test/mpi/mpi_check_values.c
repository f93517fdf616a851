/* mpi_check_values.c -- what the cases of themis-mpi-check are made of: the input values
 * (a hash of seed, rank and element, so that every rank can compute every other rank's
 * inputs), the table of predefined datatypes with their generators, reference
 * reductions and comparisons, the layouts of predefined and derived datatypes, and the
 * ops (predefined and user) with their references. */
#include "mpi_check.h"

#include <complex.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* C11's CMPLX macros; glibc defines them only for compilers with __builtin_complex.
 * The fallbacks are exact for the finite values used here. */
#ifndef CMPLXF
#define CMPLXF(x, y) ((float _Complex) ((float) (x) + _Complex_I * (float) (y)))
#endif
#ifndef CMPLX
#define CMPLX(x, y) ((double _Complex) ((double) (x) + _Complex_I * (double) (y)))
#endif
#ifndef CMPLXL
#define CMPLXL(x, y) ((long double _Complex) ((long double) (x) + _Complex_I * (long double) (y)))
#endif

/* ====================================================================== input values */

/* Per rank and element (i < 2^40). */
static inline uint64_t hval(uint64_t seed, int rank, size_t i)
{
    return mix64(seed + ((uint64_t) (unsigned) rank << 40) + (uint64_t) i);
}
/* Per element, the same on every rank. */
static inline uint64_t helem(uint64_t seed, size_t i) { return mix64(~seed ^ mix64((uint64_t) i)); }

const char *const kind_names[] = {"MPI_SUM",  "MPI_PROD", "MPI_MIN",    "MPI_MAX",
                                  "MPI_LAND", "MPI_LOR",  "MPI_LXOR",   "MPI_BAND",
                                  "MPI_BOR",  "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC",
                                  "MPI_SUM(frac)", "data"};

/* The kinds each class of predefined datatype takes (type_desc.kinds). */
#define OPS_INT                                                                                 \
    (KB(K_SUM) | KB(K_PROD) | KB(K_MIN) | KB(K_MAX) | KB(K_LAND) | KB(K_LOR) | KB(K_LXOR) |    \
     KB(K_BAND) | KB(K_BOR) | KB(K_BXOR))
#define OPS_REAL (KB(K_SUM) | KB(K_PROD) | KB(K_MIN) | KB(K_MAX) | KB(K_SUMFRAC))
#define OPS_COMPLEX (KB(K_SUM) | KB(K_PROD))
#define OPS_BOOL (KB(K_LAND) | KB(K_LOR) | KB(K_LXOR))
#define OPS_BYTE (KB(K_BAND) | KB(K_BOR) | KB(K_BXOR))
#define OPS_PAIR (KB(K_MINLOC) | KB(K_MAXLOC))

MPI_Op kind_op(kind_t k)
{
    switch (k) {
    case K_SUM: case K_SUMFRAC: return MPI_SUM;
    case K_PROD: return MPI_PROD;
    case K_MIN: return MPI_MIN;
    case K_MAX: return MPI_MAX;
    case K_LAND: return MPI_LAND;
    case K_LOR: return MPI_LOR;
    case K_LXOR: return MPI_LXOR;
    case K_BAND: return MPI_BAND;
    case K_BOR: return MPI_BOR;
    case K_BXOR: return MPI_BXOR;
    case K_MINLOC: return MPI_MINLOC;
    case K_MAXLOC: return MPI_MAXLOC;
    default: return MPI_OP_NULL;
    }
}

/* Logical ops: per element, either every rank is true, every rank false, or random. */
static int logical_on(uint64_t seed, uint64_t h, size_t i)
{
    const uint64_t mode = helem(seed, i) % 3;
    return mode == 0 ? 1 : mode == 1 ? 0 : (int) (h & 1);
}

/* Integer inputs; `tmax` is the type's largest value. SUM and PROD never overflow. */
static int64_t int_value(uint64_t seed, int rank, int nranks, size_t i, kind_t k, int is_signed,
                         uint64_t tmax)
{
    const uint64_t h = hval(seed, rank, i);
    switch (k) {
    case K_SUM: {
        uint64_t r = tmax / (uint64_t) nranks;
        if (r > 1000) r = 1000;
        return is_signed ? (int64_t) (h % (2 * r + 1)) - (int64_t) r : (int64_t) (h % (r + 1));
    }
    case K_PROD: /* {-1, 1, 2}, 2 on ranks < 6 only: |product| <= 64 */
        if (rank == nranks - 1 && (h >> 40) % 61 == 0) return 0;
        if (rank < 6 && (h >> 8) % 3 == 0) return 2;
        return (is_signed && ((h >> 16) & 1)) ? -1 : 1;
    case K_LAND: case K_LOR: case K_LXOR: {
        if (!logical_on(seed, h, i)) return 0;
        const int64_t v = (int64_t) ((h >> 8) % 100 + 1);
        return (is_signed && ((h >> 20) & 1)) ? -v : v;
    }
    case K_BAND: return (int64_t) (h | mix64(h));          /* mostly ones */
    case K_BOR: return (int64_t) (h & mix64(h) & mix64(~h)); /* mostly zeros */
    default: return (int64_t) h;                           /* MIN MAX BXOR DATA: any bits */
    }
}

/* Real inputs: exact small integers / powers of two except for K_SUMFRAC (values with
 * 53 significant bits: exact in double and long double, rounded in float). */
static double real_value(uint64_t seed, int rank, size_t i, kind_t k)
{
    const uint64_t h = hval(seed, rank, i);
    switch (k) {
    case K_SUM: return (double) ((int64_t) (h % 2001) - 1000);
    case K_PROD:
        if (rank < 6 && (h >> 8) % 3 == 0) return 2;
        if ((h >> 8) % 3 == 1) return 0.5;
        return ((h >> 16) & 1) ? -1 : 1;
    case K_SUMFRAC: return (double) (h >> 11) * 0x1p-52 - 1.0; /* [-1, 1) */
    default: return (double) ((int64_t) (h % 200001) - 100000) / 64.0;
    }
}

/* Complex inputs: small Gaussian integers. */
static void complex_value(uint64_t seed, int rank, size_t i, kind_t k, double *re, double *im)
{
    const uint64_t h = hval(seed, rank, i);
    static const int unit[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
    if (k == K_PROD) {
        if (rank < 4 && (h >> 8) % 3 == 0) {
            *re = 1, *im = 1; /* 1+i: |product| <= 4 */
        } else {
            *re = unit[h % 4][0], *im = unit[h % 4][1];
        }
    } else {
        *re = (double) ((int64_t) (h % 101) - 50);
        *im = (double) ((int64_t) ((h >> 20) % 101) - 50);
    }
}

/* ====================================================================== datatypes */


#define DEF_INT(T, NAME, SIGNED, MINMAX_QUIRK)                                                  \
    static void gen_##NAME(void *buf, size_t first, size_t n, int rank, int nr, kind_t k,      \
                           uint64_t seed)                                                      \
    {                                                                                          \
        T *p = buf;                                                                            \
        const uint64_t tmax = UINT64_MAX >> (64 - 8 * sizeof(T) + ((SIGNED) ? 1 : 0));         \
        const bool below_2_63 = (MINMAX_QUIRK) && (k == K_MIN || k == K_MAX);                  \
        for (size_t j = 0; j < n; j++) {                                                       \
            const int64_t v = int_value(seed, rank, nr, first + j, k, (SIGNED), tmax);         \
            p[j] = (T) (below_2_63 ? v & INT64_MAX : v);                                       \
        }                                                                                      \
    }                                                                                          \
    static void red_##NAME(void *acc, const void *in, size_t n, kind_t k)                      \
    {                                                                                          \
        T *a = acc;                                                                            \
        const T *x = in;                                                                       \
        for (size_t j = 0; j < n; j++) {                                                       \
            switch (k) {                                                                       \
            case K_SUM: a[j] = (T) (a[j] + x[j]); break;                                       \
            case K_PROD: a[j] = (T) (a[j] * x[j]); break;                                      \
            case K_MIN: if (x[j] < a[j]) a[j] = x[j]; break;                                   \
            case K_MAX: if (x[j] > a[j]) a[j] = x[j]; break;                                   \
            case K_LAND: a[j] = (T) (a[j] && x[j]); break;                                     \
            case K_LOR: a[j] = (T) (a[j] || x[j]); break;                                      \
            case K_LXOR: a[j] = (T) (!a[j] != !x[j]); break;                                   \
            case K_BAND: a[j] = (T) (a[j] & x[j]); break;                                      \
            case K_BOR: a[j] = (T) (a[j] | x[j]); break;                                       \
            case K_BXOR: a[j] = (T) (a[j] ^ x[j]); break;                                      \
            default: die("%s: no reference for %s", #T, kind_names[k]);                        \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static size_t cmp_##NAME(const void *got, const void *exp, size_t n, kind_t k, int nr,     \
                             size_t *first, char *text, size_t len)                            \
    {                                                                                          \
        const T *g = got, *e = exp;                                                            \
        size_t bad = 0;                                                                        \
        (void) k, (void) nr;                                                                   \
        for (size_t j = 0; j < n; j++) {                                                       \
            if (g[j] == e[j] || bad++) continue;                                               \
            *first = j;                                                                        \
            if (SIGNED)                                                                        \
                snprintf(text, len, "got %lld expected %lld", (long long) g[j],                \
                         (long long) e[j]);                                                    \
            else                                                                               \
                snprintf(text, len, "got %llu expected %llu", (unsigned long long) g[j],       \
                         (unsigned long long) e[j]);                                           \
        }                                                                                      \
        return bad;                                                                            \
    }

#define DEF_REAL(T, NAME, EPS)                                                                  \
    static void gen_##NAME(void *buf, size_t first, size_t n, int rank, int nr, kind_t k,      \
                           uint64_t seed)                                                      \
    {                                                                                          \
        T *p = buf;                                                                            \
        (void) nr;                                                                             \
        for (size_t j = 0; j < n; j++) p[j] = (T) real_value(seed, rank, first + j, k);        \
    }                                                                                          \
    static void red_##NAME(void *acc, const void *in, size_t n, kind_t k)                      \
    {                                                                                          \
        T *a = acc;                                                                            \
        const T *x = in;                                                                       \
        for (size_t j = 0; j < n; j++) {                                                       \
            switch (k) {                                                                       \
            case K_SUM: case K_SUMFRAC: a[j] += x[j]; break;                                   \
            case K_PROD: a[j] *= x[j]; break;                                                  \
            case K_MIN: if (x[j] < a[j]) a[j] = x[j]; break;                                   \
            case K_MAX: if (x[j] > a[j]) a[j] = x[j]; break;                                   \
            default: die("%s: no reference for %s", #T, kind_names[k]);                        \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static size_t cmp_##NAME(const void *got, const void *exp, size_t n, kind_t k, int nr,     \
                             size_t *first, char *text, size_t len)                            \
    {                                                                                          \
        const T *g = got, *e = exp;                                                            \
        /* max|x| = 1 for K_SUMFRAC; every other kind is exact */                              \
        const long double tol = k == K_SUMFRAC ? 2.0L * nr * nr * (EPS) : 0;                   \
        size_t bad = 0;                                                                        \
        for (size_t j = 0; j < n; j++) {                                                       \
            const long double d = (long double) g[j] - (long double) e[j];                     \
            if (fabsl(d) <= tol || bad++) continue;                                            \
            *first = j;                                                                        \
            snprintf(text, len, "got %.21Lg expected %.21Lg (tolerance %Lg)",                  \
                     (long double) g[j], (long double) e[j], tol);                             \
        }                                                                                      \
        return bad;                                                                            \
    }

#define DEF_COMPLEX(T, RT, NAME, MAKE)                                                          \
    static void gen_##NAME(void *buf, size_t first, size_t n, int rank, int nr, kind_t k,      \
                           uint64_t seed)                                                      \
    {                                                                                          \
        T *p = buf;                                                                            \
        (void) nr;                                                                             \
        for (size_t j = 0; j < n; j++) {                                                       \
            double re, im;                                                                     \
            complex_value(seed, rank, first + j, k, &re, &im);                                 \
            p[j] = MAKE((RT) re, (RT) im);                                                     \
        }                                                                                      \
    }                                                                                          \
    static void red_##NAME(void *acc, const void *in, size_t n, kind_t k)                      \
    {                                                                                          \
        T *a = acc;                                                                            \
        const T *x = in;                                                                       \
        for (size_t j = 0; j < n; j++) {                                                       \
            switch (k) {                                                                       \
            case K_SUM: a[j] += x[j]; break;                                                   \
            case K_PROD: a[j] *= x[j]; break;                                                  \
            default: die("%s: no reference for %s", #T, kind_names[k]);                        \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static size_t cmp_##NAME(const void *got, const void *exp, size_t n, kind_t k, int nr,     \
                             size_t *first, char *text, size_t len)                            \
    {                                                                                          \
        const T *g = got, *e = exp;                                                            \
        size_t bad = 0;                                                                        \
        (void) k, (void) nr;                                                                   \
        for (size_t j = 0; j < n; j++) {                                                       \
            if ((creall(g[j]) == creall(e[j]) && cimagl(g[j]) == cimagl(e[j])) || bad++)       \
                continue;                                                                      \
            *first = j;                                                                        \
            snprintf(text, len, "got %Lg%+Lgi expected %Lg%+Lgi", creall(g[j]), cimagl(g[j]),  \
                     creall(e[j]), cimagl(e[j]));                                              \
        }                                                                                      \
        return bad;                                                                            \
    }

/* MINLOC/MAXLOC pairs {value, int index}. */
#define DEF_PAIR(T, NAME)                                                                       \
    typedef struct { T v; int i; } NAME##_t;                                                   \
    static void gen_##NAME(void *buf, size_t first, size_t n, int rank, int nr, kind_t k,      \
                           uint64_t seed)                                                      \
    {                                                                                          \
        NAME##_t *p = buf;                                                                     \
        (void) nr;                                                                             \
        for (size_t j = 0; j < n; j++) {                                                       \
            const uint64_t h = hval(seed, rank, first + j);                                    \
            if (k == K_DATA) {                                                                 \
                p[j].v = (T) ((int64_t) (h % 20001) - 10000);                                  \
                p[j].i = (int) (uint32_t) (h >> 32);                                           \
            } else { /* few distinct values: many ties */                                      \
                p[j].v = (T) (h % 4);                                                          \
                p[j].i = ((h >> 8) & 1) ? rank : (int) ((h >> 16) % 1000) - 500;               \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void red_##NAME(void *acc, const void *in, size_t n, kind_t k)                      \
    {                                                                                          \
        NAME##_t *a = acc;                                                                     \
        const NAME##_t *x = in;                                                                \
        if (k != K_MINLOC && k != K_MAXLOC) die("%s: no reference for %s", #NAME, kind_names[k]); \
        for (size_t j = 0; j < n; j++) {                                                       \
            const int better = k == K_MINLOC ? x[j].v < a[j].v : x[j].v > a[j].v;              \
            if (better) a[j].v = x[j].v, a[j].i = x[j].i;                                      \
            else if (x[j].v == a[j].v && x[j].i < a[j].i) a[j].i = x[j].i;                     \
        }                                                                                      \
    }                                                                                          \
    static size_t cmp_##NAME(const void *got, const void *exp, size_t n, kind_t k, int nr,     \
                             size_t *first, char *text, size_t len)                            \
    {                                                                                          \
        const NAME##_t *g = got, *e = exp;                                                     \
        size_t bad = 0;                                                                        \
        (void) k, (void) nr;                                                                   \
        for (size_t j = 0; j < n; j++) {                                                       \
            if ((g[j].v == e[j].v && g[j].i == e[j].i) || bad++) continue;                     \
            *first = j;                                                                        \
            snprintf(text, len, "got {%Lg, %d} expected {%Lg, %d}", (long double) g[j].v,      \
                     g[j].i, (long double) e[j].v, e[j].i);                                    \
        }                                                                                      \
        return bad;                                                                            \
    }

/* X(C type, short name, MPI datatype, signed, minmax_quirk)
 * minmax_quirk: Open MPI 4.1.4 compares MPI_UNSIGNED_LONG as signed (ompi#10525, fixed
 * after 4.1.4) and MPI_OFFSET as unsigned in MIN/MAX, with or without themis; the
 * main checks give these types MIN/MAX inputs below 2^63 (where both orders agree),
 * family "quirks" checks full-range inputs against a communicator without themis. */
#define INT_TYPES(X)                                                                            \
    X(char, char, MPI_CHAR, CHAR_MIN < 0, 0)                                                   \
    X(signed char, schar, MPI_SIGNED_CHAR, 1, 0)                                               \
    X(unsigned char, uchar, MPI_UNSIGNED_CHAR, 0, 0)                                           \
    X(short, short, MPI_SHORT, 1, 0)                                                           \
    X(unsigned short, ushort, MPI_UNSIGNED_SHORT, 0, 0)                                        \
    X(int, int, MPI_INT, 1, 0)                                                                 \
    X(unsigned, uint, MPI_UNSIGNED, 0, 0)                                                      \
    X(long, long, MPI_LONG, 1, 0)                                                              \
    X(unsigned long, ulong, MPI_UNSIGNED_LONG, 0, 1)                                           \
    X(long long, llong, MPI_LONG_LONG, 1, 0)                                                   \
    X(long long, llongint, MPI_LONG_LONG_INT, 1, 0)                                            \
    X(unsigned long long, ullong, MPI_UNSIGNED_LONG_LONG, 0, 0)                                \
    X(int8_t, int8, MPI_INT8_T, 1, 0)                                                          \
    X(int16_t, int16, MPI_INT16_T, 1, 0)                                                       \
    X(int32_t, int32, MPI_INT32_T, 1, 0)                                                       \
    X(int64_t, int64, MPI_INT64_T, 1, 0)                                                       \
    X(uint8_t, uint8, MPI_UINT8_T, 0, 0)                                                       \
    X(uint16_t, uint16, MPI_UINT16_T, 0, 0)                                                    \
    X(uint32_t, uint32, MPI_UINT32_T, 0, 0)                                                    \
    X(uint64_t, uint64, MPI_UINT64_T, 0, 0)                                                    \
    X(MPI_Aint, aint, MPI_AINT, 1, 0)                                                          \
    X(MPI_Offset, offset, MPI_OFFSET, 1, 1)                                                    \
    X(MPI_Count, count, MPI_COUNT, 1, 0)
/* X(C type, short name, MPI datatype, epsilon) */
#define REAL_TYPES(X)                                                                           \
    X(float, float, MPI_FLOAT, FLT_EPSILON)                                                    \
    X(double, double, MPI_DOUBLE, DBL_EPSILON)                                                 \
    X(long double, ldouble, MPI_LONG_DOUBLE, LDBL_EPSILON)
/* X(C type, real type, short name, MPI datatype, constructor) */
#define COMPLEX_TYPES(X)                                                                        \
    X(float _Complex, float, cfloat, MPI_C_FLOAT_COMPLEX, CMPLXF)                              \
    X(float _Complex, float, ccomplex, MPI_C_COMPLEX, CMPLXF)                                  \
    X(double _Complex, double, cdouble, MPI_C_DOUBLE_COMPLEX, CMPLX)                           \
    X(long double _Complex, long double, cldouble, MPI_C_LONG_DOUBLE_COMPLEX, CMPLXL)
/* X(value type, short name, MPI datatype) */
#define PAIR_TYPES(X)                                                                           \
    X(float, floatint, MPI_FLOAT_INT)                                                          \
    X(double, doubleint, MPI_DOUBLE_INT)                                                       \
    X(long, longint, MPI_LONG_INT)                                                             \
    X(int, twoint, MPI_2INT)                                                                   \
    X(short, shortint, MPI_SHORT_INT)                                                          \
    X(long double, ldoubleint, MPI_LONG_DOUBLE_INT)

#define X_INT(T, NAME, DT, SG, Q) DEF_INT(T, NAME, SG, Q)
#define X_REAL(T, NAME, DT, EPS) DEF_REAL(T, NAME, EPS)
#define X_COMPLEX(T, RT, NAME, DT, MAKE) DEF_COMPLEX(T, RT, NAME, MAKE)
#define X_PAIR(T, NAME, DT) DEF_PAIR(T, NAME)
INT_TYPES(X_INT)
REAL_TYPES(X_REAL)
COMPLEX_TYPES(X_COMPLEX)
PAIR_TYPES(X_PAIR)
DEF_INT(wchar_t, wchar, 1, 0) /* MPI_WCHAR: no reduction op accepts it, allgather only */

/* C_BOOL: the logical ops only. */
static void gen_bool(void *buf, size_t first, size_t n, int rank, int nr, kind_t k, uint64_t seed)
{
    bool *p = buf;
    (void) nr;
    for (size_t j = 0; j < n; j++) {
        const uint64_t h = hval(seed, rank, first + j);
        p[j] = k == K_DATA ? (int) (h & 1) : logical_on(seed, h, first + j);
    }
}
static void red_bool(void *acc, const void *in, size_t n, kind_t k)
{
    bool *a = acc;
    const bool *x = in;
    for (size_t j = 0; j < n; j++) {
        switch (k) {
        case K_LAND: a[j] = a[j] && x[j]; break;
        case K_LOR: a[j] = a[j] || x[j]; break;
        case K_LXOR: a[j] = a[j] != x[j]; break;
        default: die("bool: no reference for %s", kind_names[k]);
        }
    }
}
static size_t cmp_bool(const void *got, const void *exp, size_t n, kind_t k, int nr,
                       size_t *first, char *text, size_t len)
{
    const unsigned char *g = got, *e = exp; /* compare the bytes: any other value is wrong */
    size_t bad = 0;
    (void) k, (void) nr;
    for (size_t j = 0; j < n; j++) {
        if (g[j] == e[j] || bad++) continue;
        *first = j;
        snprintf(text, len, "got %d expected %d", g[j], e[j]);
    }
    return bad;
}

/* The MPI name is stringized here, before DT is macro-expanded. */
#define ROW(NAME, STR, DT, SIZE, OPS) {STR, DT, SIZE, OPS, gen_##NAME, red_##NAME, cmp_##NAME},
#define X_INT_ROW(T, NAME, DT, SG, Q) ROW(NAME, #DT, DT, sizeof(T), OPS_INT)
#define X_REAL_ROW(T, NAME, DT, EPS) ROW(NAME, #DT, DT, sizeof(T), OPS_REAL)
#define X_COMPLEX_ROW(T, RT, NAME, DT, MAKE) ROW(NAME, #DT, DT, sizeof(T), OPS_COMPLEX)
#define X_PAIR_ROW(T, NAME, DT) ROW(NAME, #DT, DT, sizeof(NAME##_t), OPS_PAIR)

const type_desc types[] = {
    INT_TYPES(X_INT_ROW)
    REAL_TYPES(X_REAL_ROW)
    COMPLEX_TYPES(X_COMPLEX_ROW)
    ROW(bool, "MPI_C_BOOL", MPI_C_BOOL, sizeof(bool), OPS_BOOL)
    ROW(uchar, "MPI_BYTE", MPI_BYTE, 1, OPS_BYTE)
    ROW(wchar, "MPI_WCHAR", MPI_WCHAR, sizeof(wchar_t), 0)
    PAIR_TYPES(X_PAIR_ROW)
};
const size_t ntypes = sizeof types / sizeof types[0];

const type_desc *find_type(const char *name)
{
    for (size_t t = 0; t < ntypes; t++)
        if (strcmp(types[t].name, name) == 0) return &types[t];
    die("no type %s in the table", name);
    return NULL;
}

/* ====================================================================== layouts */


static void layout_query(layout *L)
{
    MPI_Aint lb;
    MPI_Type_get_extent(L->dt, &lb, &L->extent);
    MPI_Type_get_true_extent(L->dt, &L->true_lb, &L->true_extent);
    MPI_Type_size(L->dt, &L->size);
    if (lb != 0 || L->true_lb != 0) die("%s: non-zero lower bound", L->name);
    if ((size_t) L->extent != (size_t) L->ext * L->base->size)
        die("%s: MPI extent %ld != C layout %zu", L->name, (long) L->extent,
            (size_t) L->ext * L->base->size);
    L->holes = (MPI_Aint) L->size != L->extent;
}

layout predefined(const type_desc *t)
{
    layout L = {.dt = t->dt, .base = t, .nblk = 1, .offs = {0}, .ext = 1};
    snprintf(L.name, sizeof L.name, "%s", t->name);
    layout_query(&L);
    return L;
}

/* The derived layouts alive, so that the user-op callbacks can walk typed buffers. */
static const layout *g_layouts[8];
static int g_nlayouts;

static void register_layout(const layout *L)
{
    if (g_nlayouts == 8) die("too many layouts");
    g_layouts[g_nlayouts++] = L;
}

static void unregister_layout(const layout *L)
{
    for (int i = 0; i < g_nlayouts; i++)
        if (g_layouts[i] == L) g_layouts[i--] = g_layouts[--g_nlayouts];
}

/* A derived type over MPI_INT. */
void derived_int(layout *L, const char *name, MPI_Datatype dt, int nblk, const int *offs, int ext)
{
    *L = (layout) {.dt = dt, .base = find_type("MPI_INT"), .nblk = nblk, .ext = ext, .owned = true};
    snprintf(L->name, sizeof L->name, "%s", name);
    memcpy(L->offs, offs, sizeof(int) * (size_t) nblk);
    MPI_Type_commit(&L->dt);
    layout_query(L);
    register_layout(L);
}

void free_derived(layout *L)
{
    unregister_layout(L);
    MPI_Type_free(&L->dt);
}

bool layout_is_packed(const layout *L)
{
    for (int b = 0; b < L->nblk; b++)
        if (L->offs[b] != b) return false;
    return L->ext == L->nblk;
}

/* Bytes a buffer of `count` elements needs (its true extent). */
size_t span(const layout *L, size_t count)
{
    return count ? (count - 1) * (size_t) L->extent + (size_t) L->true_extent : 0;
}

/* Typed element `first + e` <-> packed base element `e * nblk + b`. */
void to_typed(const layout *L, unsigned char *typed, const unsigned char *packed, size_t first,
              size_t n)
{
    const size_t bs = L->base->size;
    if (layout_is_packed(L)) { /* the last element: only up to its true extent */
        if (n) memcpy(typed + first * (size_t) L->extent, packed, span(L, n));
        return;
    }
    for (size_t e = 0; e < n; e++)
        for (int b = 0; b < L->nblk; b++)
            memcpy(typed + ((first + e) * L->ext + L->offs[b]) * bs,
                   packed + (e * L->nblk + b) * bs, bs);
}

void from_typed(const layout *L, unsigned char *packed, const unsigned char *typed, size_t first,
                size_t n)
{
    const size_t bs = L->base->size;
    for (size_t e = 0; e < n; e++)
        for (int b = 0; b < L->nblk; b++)
            memcpy(packed + (e * L->nblk + b) * bs,
                   typed + ((first + e) * L->ext + L->offs[b]) * bs, bs);
}

/* ====================================================================== ops */


op_case predefined_op(kind_t k) { return (op_case) {kind_names[k], k, kind_op(k), NULL}; }

/* Where the ints of a datatype's elements lie, for the user-op callbacks: a derived
 * layout of this program, or else packed ints. */
typedef struct {
    int nblk, ext;
    const int *offs;
} int_map;

static int_map int_map_of(MPI_Datatype dt)
{
    static const int packed[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int l = 0; l < g_nlayouts; l++)
        if (g_layouts[l]->dt == dt)
            return (int_map) {g_layouts[l]->nblk, g_layouts[l]->ext, g_layouts[l]->offs};
    int size = 0;
    MPI_Type_size(dt, &size);
    const int n = size / (int) sizeof(int);
    return (int_map) {n, n, packed};
}

/* Commutative: a op b = a + b + 1 (so the op must run exactly N-1 times per element). */
void user_plus1(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int *a = in;
    int *b = inout;
    const int_map m = int_map_of(*dt);
    for (long e = 0; e < *len; e++)
        for (int k = 0; k < m.nblk; k++) {
            const long j = e * m.ext + m.offs[k];
            b[j] = (int) ((unsigned) a[j] + (unsigned) b[j] + 1u);
        }
}

void ref_plus1(void *acc, const void *in, size_t bytes)
{
    const size_t n = bytes / sizeof(int);
    int *a = acc;
    const int *x = in;
    for (size_t j = 0; j < n; j++) a[j] = (int) ((unsigned) a[j] + (unsigned) x[j] + 1u);
}

/* Non-commutative (associative): composition of affine maps x -> a*x + b over pairs of
 * ints {a, b}: inout = in, then inout. Packed types only (MPI_2INT, contig(2,MPI_INT)). */
void user_affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int size = 0;
    MPI_Type_size(*dt, &size);
    const int *u = in;
    int *v = inout;
    const long pairs = (long) *len * size / (long) (2 * sizeof(int));
    for (long j = 0; j < pairs; j++) {
        const unsigned au = (unsigned) u[2 * j], bu = (unsigned) u[2 * j + 1];
        const unsigned av = (unsigned) v[2 * j], bv = (unsigned) v[2 * j + 1];
        v[2 * j] = (int) (au * av);
        v[2 * j + 1] = (int) (av * bu + bv);
    }
}

void ref_affine(void *acc, const void *in, size_t bytes)
{
    const size_t n = bytes / sizeof(int);
    int *a = acc;
    const int *x = in;
    for (size_t j = 0; j + 1 < n; j += 2) {
        const unsigned a1 = (unsigned) a[j], b1 = (unsigned) a[j + 1];
        const unsigned a2 = (unsigned) x[j], b2 = (unsigned) x[j + 1];
        a[j] = (int) (a1 * a2);          /* x -> a2 * (a1 * x + b1) + b2 */
        a[j + 1] = (int) (a2 * b1 + b2);
    }
}

