/* rmath.h — math functions on `real` (float or double by build), so that the double build is
 * double throughout and the float build never silently computes in double (or the reverse).
 * Also the small helpers the op kernels share: the OpenMP size threshold, the fixed-order column
 * sum used by every bias/gain gradient, and the race-free scatter-add of rows. */
#ifndef DEBERTA_RMATH_H
#define DEBERTA_RMATH_H
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>
#include "autograd/tensor.h"

#if REAL_IS_DOUBLE
static inline real rexp(real x) { return exp(x); }
static inline real rlog(real x) { return log(x); }
static inline real rlog1p(real x) { return log1p(x); }
static inline real rerf(real x) { return erf(x); }
static inline real rsqrt(real x) { return sqrt(x); }
static inline real rfabs(real x) { return fabs(x); }
#else
/* Vector variants of the float functions from glibc's libmvec (libm.so pulls it in as needed):
 * (and double exp) loops over them vectorise (_ZGVdN8v_expf, _ZGVeN16v_erff, ...), within 4 ulp of the scalar
 * functions.  glibc's math.h only declares them under -ffast-math; the declarations below do
 * the same without -ffast-math.  Define DEBERTA_NO_LIBMVEC to keep the scalar calls. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && !defined(DEBERTA_NO_LIBMVEC)
#pragma omp declare simd notinbranch
float expf(float);
#pragma omp declare simd notinbranch
float erff(float);
#pragma omp declare simd notinbranch
float logf(float);
#pragma omp declare simd notinbranch
float log1pf(float);
#pragma omp declare simd notinbranch
double exp(double); /* the replacement sampling's exps, in double also in the float build (model/electra.c) */
#endif
static inline real rexp(real x) { return expf(x); }
static inline real rlog(real x) { return logf(x); }
static inline real rlog1p(real x) { return log1pf(x); }
static inline real rerf(real x) { return erff(x); }
static inline real rsqrt(real x) { return sqrtf(x); }
static inline real rfabs(real x) { return fabsf(x); }
#endif

/* GELU, exact (erf) form: 0.5 x (1 + erf(x/√2)) */
#define INV_SQRT2 0.70710678118654752440
static inline real gelu1(real x) { return (real)0.5 * x * (1 + rerf(x * (real)INV_SQRT2)); }

/* k ? v : other for a mask byte k of 0 or 1, as a bitwise select of the two values' bits: the same bits as the
 * conditional, and a loop of it vectorises on AVX2 (without AVX-512's masked operations gcc keeps a ?: on
 * a computed float as a branch, since the computation might trap). */
static inline real rselect(uint8_t k, real v, real other) {
#if REAL_IS_DOUBLE
    uint64_t bv, bo;
    const uint64_t m = (uint64_t)0 - k;
#else
    uint32_t bv, bo;
    const uint32_t m = (uint32_t)0 - k;
#endif
    memcpy(&bv, &v, sizeof v);
    memcpy(&bo, &other, sizeof other);
    bv = (bv & m) | (bo & ~m);
    memcpy(&v, &bv, sizeof v);
    return v;
}

/* Loops over fewer elements than this run on one thread (the pool wake-up costs more).  Only
 * loops whose iterations write disjoint outputs use it, so results do not depend on it. */
#define OMP_MIN_ELEMS 16384L

/* dst = src when fresh (dst from tape_grad_put, not yet written), else dst += src */
static inline void grad_put(real *dst, const real *src, long n, int fresh) {
    if (fresh) {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
        for (long i = 0; i < n; i++) dst[i] = src[i];
    } else {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
        for (long i = 0; i < n; i++) dst[i] += src[i];
    }
}

/* Fixed-order column sums (bias and gain gradients).  Rows are cut into chunks of COLSUM_ROWS
 * (independent of the thread count); each chunk's column sums go to a row of a scratch matrix
 * part [nchunks, C] (row-major, contiguous access, chunks in parallel), then every column adds
 * its chunk sums in chunk order (column blocks in parallel).  Bitwise identical for any thread
 * count. */
#define COLSUM_ROWS 32L
#define COLSUM_BLOCK 64

static inline long colsum_nchunks(long R) { return (R + COLSUM_ROWS - 1) / COLSUM_ROWS; }

/* db[c] += Σ_k part[k, c], k = 0..nchunks−1 in order */
static inline void colsum_finish(real *db, const real *part, long nchunks, int C) {
    const int nb = (C + COLSUM_BLOCK - 1) / COLSUM_BLOCK;
#pragma omp parallel for schedule(static) if (nchunks * (long)C >= OMP_MIN_ELEMS)
    for (int bk = 0; bk < nb; bk++) {
        const int c0 = bk * COLSUM_BLOCK, c1 = c0 + COLSUM_BLOCK < C ? c0 + COLSUM_BLOCK : C;
        for (long k = 0; k < nchunks; k++) {
            const real *pk = part + k * C;
            for (int c = c0; c < c1; c++) db[c] += pk[c];
        }
    }
}

/* db[c] += Σ_r src[r, c] for src [R, C], in the fixed order above; scratch from the arena. */
static inline void colsum_acc(Arena *a, real *db, const real *src, long R, int C) {
    const long nch = colsum_nchunks(R);
    real *part = arena_alloc(a, (size_t)(nch ? nch : 1) * C * sizeof(real));
#pragma omp parallel for schedule(static) if (R * (long)C >= OMP_MIN_ELEMS)
    for (long k = 0; k < nch; k++) {
        real *pk = part + k * C;
        const long r0 = k * COLSUM_ROWS, r1 = r0 + COLSUM_ROWS < R ? r0 + COLSUM_ROWS : R;
        for (int c = 0; c < C; c++) pk[c] = 0;
        for (long r = r0; r < r1; r++) {
            const real *row = src + r * C;
            for (int c = 0; c < C; c++) pk[c] += row[c];
        }
    }
    colsum_finish(db, part, nch, C);
}

/* dst[idx[k], :] += src[k, :] for k = 0..n-1 (dst [R, C], src [n, C]); rows equal to skip (>= 0)
 * are left alone.  Each thread owns the destination rows r with r % nthreads == its id and walks
 * k in increasing order, so no two threads touch one row and every row sums in the order of k:
 * bitwise identical for any thread count, no atomics. */
static inline void scatter_add_rows(real *dst, const real *src, const int32_t *idx, long n, int C, long skip) {
    const int par = n * (long)C >= OMP_MIN_ELEMS;
#pragma omp parallel if (par)
    {
        const int nth = omp_get_num_threads(), tid = omp_get_thread_num();
        for (long k = 0; k < n; k++) {
            const int32_t r = idx[k];
            if (r == skip || r % nth != tid) continue;
            real *d = dst + (long)r * C;
            const real *s = src + k * C;
            for (int c = 0; c < C; c++) d[c] += s[c];
        }
    }
}
/* y[0..n) = softmax of x[0..n) over the entries with km[j] != 0 (km NULL: all), 0 elsewhere; a row
 * with no kept entry (or only −inf scores) is all zeros.  Masked scores never enter exp().  y may
 * be x (in place).  Vectorised (libmvec exp), sums in SIMD order.  Shared by the masked softmax op
 * and the fused attention op. */
static inline void softmax_row(real *y, const real *x, int n, const int32_t *km) {
    real mx = -(real)INFINITY;
    if (km) {
#pragma omp simd reduction(max : mx)
        for (int j = 0; j < n; j++) {
            const real v = km[j] ? x[j] : -(real)INFINITY;
            mx = v > mx ? v : mx;
        }
    } else {
#pragma omp simd reduction(max : mx)
        for (int j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    }
    if (mx == -(real)INFINITY) { /* every key masked (or every kept score −inf): a masked row */
        memset(y, 0, (size_t)n * sizeof(real));
        return;
    }
    /* masked entries: exp(0) is computed and replaced by 0 — their scores never enter exp()
     * (and exp(−inf) would send the vector exp through its slow special-case path) */
    real s = 0;
    if (km) {
        for (int j = 0; j < n; j++) y[j] = km[j] ? x[j] - mx : 0;
#pragma omp simd
        for (int j = 0; j < n; j++) y[j] = rexp(y[j]);
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < n; j++) {
            const real e = km[j] ? y[j] : 0;
            y[j] = e;
            s += e;
        }
    } else {
#pragma omp simd reduction(+ : s)
        for (int j = 0; j < n; j++) {
            const real e = rexp(x[j] - mx);
            y[j] = e;
            s += e;
        }
    }
    const real inv = 1 / s; /* s >= 1: the max entry contributes exp(0) */
    for (int j = 0; j < n; j++) y[j] *= inv;
}

#endif
