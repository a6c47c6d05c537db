/* ops_attention.c — fused disentangled attention probabilities: scores (c2c + gathered c2p +
 * gathered p2c), scale, pairwise mask and softmax in one op with a hand-written backward.
 * See ops_attention.h for the formula.  Forward: threads own (batch, head) pairs.  Backward: threads own
 * heads when they divide among them (each adds its pairs' shares of the shared relative table's gradient
 * in increasing b, right after each pair), else pairs, with that sum afterwards in the same order. */
#include <omp.h>
#include <string.h>
#include "autograd/gemm.h"
#include "autograd/ops_attention.h"
#include "autograd/ops.h"
#include "autograd/rmath.h"

int g_attention_by_pairs = 0;
int g_attention_scatter = 0;
int g_attention_run_min = 4;

typedef struct {
    int B, A, Tq, Tk, D, R, terms;
    int bth; /* q, k are [B, T, A·D] (heads interleaved, as the linear layers write them), not [B, A, T, D] */
} DAGeom;

/* Offset of pair (b, a)'s first row in q ([B, T, A, D] or [B, A, T, D], T rows) and the stride between
 * its rows. */
static inline long da_off(const DAGeom *g, int b, int a, int T) {
    return g->bth ? (long)b * T * g->A * g->D + (long)a * g->D : ((long)b * g->A + a) * T * g->D;
}
static inline int da_ld(const DAGeom *g) { return g->bth ? g->A * g->D : g->D; }

/* heads = 0: q, k are [B, A, T, D]; heads > 0: [B, T, heads·D]. */
static DAGeom da_geometry(const Tensor *q, const Tensor *k, int heads, const Tensor *qr, const Tensor *kr, const int32_t *c,
                          int terms) {
    char s1[64], s2[64];
    const char *op = "disentangled_attention";
    OP_CHECK(q && k, op, "NULL q or k");
    OP_CHECK(terms > 0 && terms <= ATT_ALL, op, "attention terms %d: need a non-empty subset of c2c|c2p|p2c", terms);
    DAGeom g;
    if (heads) {
        OP_CHECK(q->ndim == 3 && k->ndim == 3 && heads > 0 && q->shape[2] % heads == 0, op,
                 "q %s and k %s must be [B, T, A·D] with A = %d dividing the last dim", shape_str(q, s1, 64), shape_str(k, s2, 64),
                 heads);
        g = (DAGeom){q->shape[0], heads, q->shape[1], k->shape[1], q->shape[2] / heads, 0, terms, 1};
        OP_CHECK(k->shape[0] == g.B && k->shape[2] == q->shape[2], op, "q %s and k %s differ in B or A·D", shape_str(q, s1, 64),
                 shape_str(k, s2, 64));
    } else {
        OP_CHECK(q->ndim == 4 && k->ndim == 4, op, "q %s and k %s must be [B, A, T, D]", shape_str(q, s1, 64), shape_str(k, s2, 64));
        g = (DAGeom){q->shape[0], q->shape[1], q->shape[2], k->shape[2], q->shape[3], 0, terms, 0};
        OP_CHECK(k->shape[0] == g.B && k->shape[1] == g.A && k->shape[3] == g.D, op, "q %s and k %s differ in B, A or D",
                 shape_str(q, s1, 64), shape_str(k, s2, 64));
    }
    const Tensor *tabs[2] = {(terms & ATT_P2C) ? qr : NULL, (terms & ATT_C2P) ? kr : NULL};
    const char *tn[2] = {"qr (p2c)", "kr (c2p)"};
    for (int i = 0; i < 2; i++) {
        const Tensor *x = tabs[i];
        if (!x) {
            OP_CHECK(!(i == 0 ? (terms & ATT_P2C) : (terms & ATT_C2P)), op, "%s is NULL but the term is on", tn[i]);
            continue;
        }
        int ok = (x->ndim == 3 || (x->ndim == 4 && x->shape[0] == 1)) && tdim(x, -3) == g.A && tdim(x, -1) == g.D;
        OP_CHECK(ok, op, "%s %s must be [A, R, D] or [1, A, R, D] with A = %d, D = %d", tn[i], shape_str(x, s1, 64), g.A, g.D);
        OP_CHECK(g.R == 0 || g.R == tdim(x, -2), op, "qr and kr have different row counts");
        g.R = tdim(x, -2);
    }
    if (terms & (ATT_C2P | ATT_P2C)) OP_CHECK(c != NULL, op, "c2p/p2c need the relative index c");
    return g;
}

/* P[b,a] = masked softmax of S[b,a] (the scaled scores, given in P, overwritten).  Row i of batch b is kept
 * iff qm[b·Tq+i]; entry j iff km[b·Tk+j].  The row kernel is the softmax op's (rmath.h softmax_row:
 * max over kept entries, masked entries never enter exp, vectorised). */
static void masked_softmax_rows(real *P, int Tq, int Tk, const int32_t *qm, const int32_t *km) {
    for (int i = 0; i < Tq; i++) {
        real *row = P + (long)i * Tk;
        if (qm && !qm[i]) {
            memset(row, 0, (size_t)Tk * sizeof(real));
            continue;
        }
        softmax_row(row, row, Tk, km);
    }
}

/* The dropout fused into the op (or none: keep == NULL): Pd = dropout(P) with the mask op_dropout_batch
 * would draw (stream, and P's first element at global element off). */
typedef struct {
    real *Pd;
    uint8_t *keep;
    real p;
    uint64_t seed, stream;
    int64_t off;
} DADrop;

/* The context fused into the op (or none: ctx == NULL): ctx [B, Tq, A·D] = Pd · v per (b, a) on the D
 * columns of head a, v [B, Tk, A·D]; Pd of one pair lives in the thread's scratch (no [B, A, Tq, Tk] tensor). */
typedef struct {
    const real *v;
    real *ctx;
} DACtx;

/* Reals of the forward's per-thread scratch: the gathered products Pc [Tq, R] and PpT [R, Tk]; with the
 * context and a dropout also one pair's Pd; with no P kept (own_p) one pair's P. */
static size_t da_forward_scratch(const DAGeom *g, int ctx_drop, int own_p) {
    return (g->terms & (ATT_C2P | ATT_P2C) ? (size_t)(g->Tq + g->Tk) * g->R : 0) +
           ((size_t)(ctx_drop != 0) + (size_t)(own_p != 0)) * g->Tq * g->Tk;
}

/* Row i of the scores in place, for the position terms that are on:
 *   S[j] = scale · ((S[j] + Pc[c(i,j)]) + PpT[c(i,j), j])   (the sum in this order)
 * with pci = row i of Pc = q · kr^T and PpT = qr · k^T [R, Tk].  Where the row's runs of equal c(i,j)
 * (rs[0 .. nr), da_runs) are g_attention_run_min entries long or more on average, a run adds one broadcast Pc value
 * and a contiguous stretch of PpT's row c; else entry by entry, gathering.  Both give the same bits. */
static void da_score_row(real *Si, const int32_t *ci, const real *pci, const real *PpT, int Tk, int terms, real scale,
                         const int32_t *rs, int nr) {
    const int c2p = (terms & ATT_C2P) != 0, p2c = (terms & ATT_P2C) != 0;
    if (!c2p && !p2c) {
#pragma omp simd
        for (int j = 0; j < Tk; j++) Si[j] *= scale;
        return;
    }
    if ((long)nr * g_attention_run_min <= Tk) {
        for (int r = 0; r < nr; r++) {
            const int j0 = rs[r], j1 = r + 1 < nr ? rs[r + 1] : Tk, c = ci[j0];
            const real pc = c2p ? pci[c] : 0, *pp = PpT + (long)c * Tk;
            if (c2p && p2c && j1 - j0 < 8) { /* short runs (near the diagonal): no vector set-up */
                for (int j = j0; j < j1; j++) Si[j] = scale * ((Si[j] + pc) + pp[j]);
            } else if (c2p && p2c) {
#pragma omp simd
                for (int j = j0; j < j1; j++) Si[j] = scale * ((Si[j] + pc) + pp[j]);
            } else if (c2p) {
#pragma omp simd
                for (int j = j0; j < j1; j++) Si[j] = scale * (Si[j] + pc);
            } else {
#pragma omp simd
                for (int j = j0; j < j1; j++) Si[j] = scale * (Si[j] + pp[j]);
            }
        }
        return;
    }
    if (c2p && p2c) {
#pragma omp simd
        for (int j = 0; j < Tk; j++) Si[j] = scale * ((Si[j] + pci[ci[j]]) + PpT[(long)ci[j] * Tk + j]);
    } else if (c2p) {
#pragma omp simd
        for (int j = 0; j < Tk; j++) Si[j] = scale * (Si[j] + pci[ci[j]]);
    } else {
#pragma omp simd
        for (int j = 0; j < Tk; j++) Si[j] = scale * (Si[j] + PpT[(long)ci[j] * Tk + j]);
    }
}

/* P [B,A,Tq,Tk] from q [B,A,Tq,D], k [B,A,Tk,D], qr/kr [A,R,D], c [Tq,Tk] (with its runs, da_runs); with dr->keep also
 * Pd = dropout(P), and with cx->ctx the context Pd · v, block by block while the block is in cache.
 * P NULL (only with cx->ctx): each pair's P lives in the thread's scratch and is not kept (a forward that
 * records nothing for a backward).  scratch: omp_get_max_threads() · da_forward_scratch reals. */
static void disentangled_attention_forward(real *P, real *scratch, const real *q, const real *k, const real *qr, const real *kr,
                                    const int32_t *c, const int32_t *run_off, const int32_t *run_start, const int32_t *qmask,
                                    const int32_t *kmask, const DAGeom *g, real scale, const DADrop *dr, const DACtx *cx) {
    const int Tq = g->Tq, Tk = g->Tk, D = g->D, R = g->R, A = g->A, ld = da_ld(g);
    const int ctx_drop = cx->ctx && dr->keep;
    const long nba = (long)g->B * A, fs = (long)da_forward_scratch(g, ctx_drop, !P);
    const int par = nba > 1 && nba * Tq * Tk >= 4096;
#pragma omp parallel for schedule(static) if (par)
    for (long ba = 0; ba < nba; ba++) {
        const int b = (int)(ba / A), a = (int)(ba % A);
        const real *qb = q + da_off(g, b, a, Tq), *kb = k + da_off(g, b, a, Tk);
        real *own = scratch ? scratch + omp_get_thread_num() * fs : NULL;
        const int pos = (g->terms & (ATT_C2P | ATT_P2C)) != 0;
        real *Pc = pos ? own : NULL;                      /* [Tq, R] */
        real *PpT = pos ? Pc + (long)Tq * R : NULL;       /* [R, Tk] */
        real *Pd = pos ? PpT + (long)Tk * R : own;        /* [Tq, Tk] (context with dropout) */
        real *S = P ? P + ba * Tq * Tk : Pd + (ctx_drop ? (long)Tq * Tk : 0);
        /* c2c: S = q · k^T */
        if (g->terms & ATT_C2C)
            gemm(0, 1, Tq, Tk, D, 1, qb, ld, kb, ld, 0, S, Tk);
        else
            memset(S, 0, (size_t)Tq * Tk * sizeof(real));
        /* c2p: Pc = q · kr[a]^T [Tq, R];  p2c: PpT = qr[a] · k^T [R, Tk] (row c of PpT is contiguous in j) */
        if (g->terms & ATT_C2P)
            gemm(0, 1, Tq, R, D, 1, qb, ld, kr + (long)a * R * D, D, 0, Pc, R);
        if (g->terms & ATT_P2C)
            gemm(0, 1, R, Tk, D, 1, qr + (long)a * R * D, D, kb, ld, 0, PpT, Tk);
        for (int i = 0; i < Tq; i++)
            da_score_row(S + (long)i * Tk, pos ? c + (long)i * Tk : NULL, Pc ? Pc + (long)i * R : NULL, PpT, Tk, g->terms, scale,
                         pos ? run_start + run_off[i] : NULL, pos ? run_off[i + 1] - run_off[i] : 0);
        masked_softmax_rows(S, Tq, Tk, qmask ? qmask + (long)b * Tq : NULL, kmask ? kmask + (long)b * Tk : NULL);
        const long o = ba * Tq * Tk;
        if (cx->ctx) { /* ctx[b, :, a·D ..] = Pd · v[b, :, a·D ..] */
            if (dr->keep) dropout_apply(Pd, dr->keep + o, S, (long)Tq * Tk, dr->p, dr->seed, dr->stream, dr->off + o);
            gemm(0, 0, Tq, D, Tk, 1, dr->keep ? Pd : S, Tk, cx->v + da_off(g, b, a, Tk), ld, 0, cx->ctx + da_off(g, b, a, Tq), ld);
        } else if (dr->keep) {
            dropout_apply(dr->Pd + o, dr->keep + o, S, (long)Tq * Tk, dr->p, dr->seed, dr->stream, dr->off + o);
        }
    }
}

/* The backward's inputs and outputs.  dq, dk are accumulated per (b,a) (assigned when dq_fresh / dk_fresh:
 * buffers from tape_grad_put), dqr, dkr summed over b; any gradient pointer may be NULL. */
typedef struct {
    real *dq, *dk, *dqr, *dkr, *dv;
    int dq_fresh, dk_fresh, dv_fresh;
    const real *dP, *P, *q, *k, *qr, *kr;
    const real *v, *dctx; /* the fused context (v != NULL): dP is then made per pair from dctx */
    const int32_t *c;
    const uint8_t *keep; /* the fused dropout's mask, or NULL */
    real scale, ks;      /* ks = 1 / (1 − p) of the dropout */
    int merge_runs;      /* add runs of equal c(i,j) as one sum (da_check_index) */
    const int32_t *run_off, *run_start; /* the runs of equal c(i,j) in each row (da_runs) */
} DABack;

/* Checks that every c(i,j) names a table row, and says whether the c2p gradient's scatter
 * dPc[i, c(i,j)] += dS[i,j] (j increasing) should add each run of equal c(i,j) as one sum: when every row
 * of c is monotone, each value's entries in a row are one run, and the run's sum added to the
 * zero-filled element is bitwise the scatter's result (the additions happen in the same order;
 * 0 + x = x).  Worth it when runs are long (far relative distances share a log bucket, e.g. T 512 with
 * 64 buckets): the scatter then waits on each addition into the same element.  Chosen when at least a
 * third of the entries continue a run.  One pass over c, in the forward; the backward reads the answer. */
static int da_check_index(const int32_t *c, int Tq, int Tk, int R) {
    long same = 0;
    int monotone = 1;
    for (int i = 0; i < Tq; i++) {
        const int32_t *ci = c + (long)i * Tk;
        int up = 0, down = 0;
        for (int j = 0; j < Tk; j++) {
            OP_CHECK(ci[j] >= 0 && ci[j] < R, "disentangled_attention", "c[%ld] = %d outside the %d table rows",
                     (long)i * Tk + j, (int)ci[j], R);
            if (j == 0) continue;
            same += ci[j] == ci[j - 1];
            up |= ci[j] > ci[j - 1];
            down |= ci[j] < ci[j - 1];
        }
        monotone &= !(up && down);
    }
    return !g_attention_scatter && Tk >= 2 && monotone && 3 * same >= (long)Tq * (Tk - 1);
}

/* The c2p gradient of n <= 4 neighbouring rows of c (at c, dS [n, Tk], dpc [n, R], zero-filled) when every row
 * of c is monotone (merge_runs): each run of equal c(i,j) is summed in increasing j, then added once to its
 * zero element (0 + sum: bitwise the entry-by-entry scatter, as each value has one run per row).  The run's
 * running sum is stored at every entry (the last store of a run holds its whole sum, as 0 + sum), so the
 * n rows' addition chains are independent of each other and free of branches. */
static inline __attribute__((always_inline)) void da_c2p_runs(const int32_t *c, const real *dS, real *dpc, int Tk, int R,
                                                               const int n) {
    const int32_t *ci[4];
    const real *si[4];
    real *di[4], acc[4];
    for (int l = 0; l < n; l++) {
        ci[l] = c + (long)l * Tk;
        si[l] = dS + (long)l * Tk;
        di[l] = dpc + (long)l * R;
        acc[l] = si[l][0];
    }
    for (int j = 1; j < Tk; j++)
        for (int l = 0; l < n; l++) {
            const int32_t cp = ci[l][j - 1];
            di[l][cp] = acc[l] + 0;
            acc[l] = ci[l][j] == cp ? acc[l] + si[l][j] : si[l][j];
        }
    for (int l = 0; l < n; l++) di[l][ci[l][Tk - 1]] = acc[l] + 0;
}

/* Whether the backward remakes a pair's dropped probabilities (the fused context with a dropout). */
static int da_remakes_pd(const DABack *x) { return x->v && x->keep; }

/* One (b,a) pair: with the fused context first dP = dctx[b,a] · v[b,a]^T (in dS); then dS [Tq,Tk] from dP
 * (and, with a dropout, Pd remade from P and the keep mask in pd [Tq,Tk] in the same pass), then
 * dv[b,a] = Pd^T · dctx[b,a]; dq, dk of the
 * c2c term; the gathers' gradients dpc [Tq,R] and dpp, held transposed as [R,Tk] (zeroed and scattered
 * here), and their dq += dpc·kr, dk += dpp·qr.  The tables' gradients (which sum over b) are left to the
 * caller. */
static void da_backward_pair(const DABack *x, const DAGeom *g, long ba, real *dS, real *dpc, real *dpp, real *pd) {
    const int Tq = g->Tq, Tk = g->Tk, D = g->D, R = g->R, a = (int)(ba % g->A), b = (int)(ba / g->A), ld = da_ld(g);
    const real *Pb = x->P + ba * Tq * Tk, *dPb = x->v ? dS : x->dP + ba * Tq * Tk;
    const real *qb = x->q + da_off(g, b, a, Tq), *kb = x->k + da_off(g, b, a, Tk);
    const real scale = x->scale, ks = x->ks;
    const int32_t *c = x->c;
    const real *dc = x->v ? x->dctx + da_off(g, b, a, Tq) : NULL;
    if (x->v) gemm(0, 1, Tq, Tk, D, 1, dc, ld, x->v + da_off(g, b, a, Tk), ld, 0, dS, Tk);
    /* P = softmax(scale·S):  dS[i,j] = scale · P[i,j] · (dP[i,j] − Σ_j' P[i,j'] dP[i,j'])
     * (masked entries have P = 0, so they get dS = 0).  With the fused context and dropout, the same pass
     * over row i of P remakes the row of Pd that dv's product below reads (as the forward's dropout_apply
     * made it), so P is read once. */
    const int remake = x->dv && da_remakes_pd(x);
    for (int i = 0; i < Tq; i++) {
        const real *p = Pb + (long)i * Tk;
        const real *dp = dPb + (long)i * Tk;
        real *ds = dS + (long)i * Tk;
        if (x->keep) { /* dP = dropout backward of dPd: keep ? dPd/(1 − p) : 0, staged in ds */
            const uint8_t *kp = x->keep + ba * Tq * Tk + (long)i * Tk;
            if (remake) {
                real *pdi = pd + (long)i * Tk;
#pragma omp simd
                for (int j = 0; j < Tk; j++) {
                    ds[j] = rselect(kp[j], dp[j] * ks, 0);
                    pdi[j] = rselect(kp[j], p[j] * ks, 0);
                }
            } else {
#pragma omp simd
                for (int j = 0; j < Tk; j++) ds[j] = rselect(kp[j], dp[j] * ks, 0);
            }
            dp = ds;
        }
        real dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int j = 0; j < Tk; j++) dot += p[j] * dp[j];
        for (int j = 0; j < Tk; j++) ds[j] = scale * p[j] * (dp[j] - dot);
    }
    /* dv[b,a] = Pd^T · dctx[b,a] */
    if (x->v && x->dv)
        gemm(1, 0, Tk, D, Tq, 1, x->keep ? pd : Pb, Tk, dc, ld, x->dv_fresh ? 0 : 1, x->dv + da_off(g, b, a, Tk), ld);
    real *dq = x->dq ? x->dq + da_off(g, b, a, Tq) : NULL, *dk = x->dk ? x->dk + da_off(g, b, a, Tk) : NULL;
    /* the first gemm into a fresh dq / dk block assigns (beta 0), the later ones add */
    real bq = x->dq_fresh ? 0 : 1, bk = x->dk_fresh ? 0 : 1;
    /* S = q · k^T:  dq += dS · k,  dk += dS^T · q */
    if (g->terms & ATT_C2C) {
        if (dq) gemm(0, 0, Tq, D, Tk, 1, dS, Tk, kb, ld, bq, dq, ld);
        if (dk) gemm(1, 0, Tk, D, Tq, 1, dS, Tk, qb, ld, bk, dk, ld);
        bq = bk = 1;
    }
    /* S[i,j] += Pc[i, c(i,j)], Pc = q · kr^T:  dPc[i, c(i,j)] += dS[i,j];  dq += dPc · kr */
    if (g->terms & ATT_C2P) {
        memset(dpc, 0, (size_t)Tq * R * sizeof(real));
        int i = 0;
        if (x->merge_runs && (long)x->run_off[Tq] * g_attention_run_min <= (long)Tq * Tk) {
            /* long runs: each summed in a register (one chain of additions), then added once */
            for (; i < Tq; i++) {
                const int32_t *ci = c + (long)i * Tk, *rs = x->run_start + x->run_off[i];
                const real *ds = dS + (long)i * Tk;
                real *d = dpc + (long)i * R;
                const int nr = x->run_off[i + 1] - x->run_off[i];
                for (int r = 0; r < nr; r++) {
                    const int j1 = r + 1 < nr ? rs[r + 1] : Tk;
                    real acc = ds[rs[r]];
                    for (int j = rs[r] + 1; j < j1; j++) acc += ds[j];
                    d[ci[rs[r]]] += acc;
                }
            }
        } else if (x->merge_runs) { /* short runs: four rows' chains side by side */
            for (; i + 4 <= Tq; i += 4) da_c2p_runs(c + (long)i * Tk, dS + (long)i * Tk, dpc + (long)i * R, Tk, R, 4);
            for (; i < Tq; i++) da_c2p_runs(c + (long)i * Tk, dS + (long)i * Tk, dpc + (long)i * R, Tk, R, 1);
        }
        for (; i < Tq; i++) {
            const int32_t *ci = c + (long)i * Tk;
            const real *ds = dS + (long)i * Tk;
            real *d = dpc + (long)i * R;
            for (int j = 0; j < Tk; j++) d[ci[j]] += ds[j];
        }
        if (dq) gemm(0, 0, Tq, D, R, 1, dpc, R, x->kr + (long)a * R * D, D, bq, dq, ld);
        bq = 1;
    }
    /* S[i,j] += Pp[j, c(i,j)], Pp = k · qr^T:  dPp[j, c(i,j)] += dS[i,j];  dk += dPp · qr.  dPp is held
     * transposed, dpp[c, j], so that a run of equal c(i,j) in row i (neighbouring j) adds into neighbouring
     * elements: one vector add per run instead of one scattered addition per entry.  Every element still
     * receives its additions in the same order (i increasing), so the result is the scatter's, bit for bit. */
    if (g->terms & ATT_P2C) {
        memset(dpp, 0, (size_t)Tk * R * sizeof(real));
        for (int i = 0; i < Tq; i++) {
            const int32_t *ci = c + (long)i * Tk, *rs = x->run_start + x->run_off[i];
            const real *ds = dS + (long)i * Tk;
            const int nr = x->run_off[i + 1] - x->run_off[i];
            if (g_attention_scatter) { /* the reference: entry by entry */
                for (int j = 0; j < Tk; j++) dpp[(long)ci[j] * Tk + j] += ds[j];
                continue;
            }
            for (int r = 0; r < nr; r++) {
                const int j0 = rs[r], j1 = r + 1 < nr ? rs[r + 1] : Tk;
                real *d = dpp + (long)ci[j0] * Tk;
                if (j1 - j0 == 1) { /* near the diagonal every distance has its own bucket: runs of one */
                    d[j0] += ds[j0];
                    continue;
                }
#pragma omp simd
                for (int j = j0; j < j1; j++) d[j] += ds[j];
            }
        }
        if (dk) gemm(1, 0, Tk, D, R, 1, dpp, Tk, x->qr + (long)a * R * D, D, bk, dk, ld);
        bk = 1;
    }
    /* no term wrote a fresh block (a term subset without it): its gradient is zero */
    for (int i = 0; dq && bq == 0 && i < Tq; i++) memset(dq + (long)i * ld, 0, (size_t)D * sizeof(real));
    for (int j = 0; dk && bk == 0 && j < Tk; j++) memset(dk + (long)j * ld, 0, (size_t)D * sizeof(real));
}

/* The tables' share of pair (b,a): dkr[a] += dpc^T · q[b,a],  dqr[a] += dpp^T · k[b,a] (dpp held as [R,Tk]). */
static void da_backward_tables(const DABack *x, const DAGeom *g, long ba, const real *dpc, const real *dpp) {
    const int Tq = g->Tq, Tk = g->Tk, D = g->D, R = g->R, a = (int)(ba % g->A), b = (int)(ba / g->A), ld = da_ld(g);
    if (x->dkr && (g->terms & ATT_C2P))
        gemm(1, 0, R, D, Tq, 1, dpc, R, x->q + da_off(g, b, a, Tq), ld, 1, x->dkr + (long)a * R * D, D);
    if (x->dqr && (g->terms & ATT_P2C))
        gemm(0, 0, R, D, Tk, 1, dpp, Tk, x->k + da_off(g, b, a, Tk), ld, 1, x->dqr + (long)a * R * D, D);
}

/* Per-thread working memory (reals) of the backward: dS, dpc, dpp of one pair, and pd when remade. */
static size_t da_pair_scratch(const DABack *x, const DAGeom *g) {
    return (size_t)g->Tq * g->Tk * (da_remakes_pd(x) ? 2 : 1) + (size_t)(g->Tq + g->Tk) * g->R;
}

/* Whether the backward lets each thread own whole heads (da_backward_heads) rather than pairs. */
static int da_by_heads(const DAGeom *g, int nt) { return g->A % nt == 0; }

/* Threads own heads; per head, b in increasing order: the pair, then its share of the tables while dpc
 * and dpp are still in cache.  scratch: nt · da_pair_scratch reals. */
static void da_backward_heads(const DABack *x, const DAGeom *g, real *scratch, int par) {
#pragma omp parallel for schedule(static) if (par)
    for (int a = 0; a < g->A; a++) {
        real *dS = scratch + (long)omp_get_thread_num() * da_pair_scratch(x, g);
        real *dpc = dS + (long)g->Tq * g->Tk, *dpp = dpc + (long)g->Tq * g->R, *pd = dpp + (long)g->Tk * g->R;
        for (int b = 0; b < g->B; b++) {
            const long ba = (long)b * g->A + a;
            da_backward_pair(x, g, ba, dS, dpc, dpp, pd);
            da_backward_tables(x, g, ba, dpc, dpp);
        }
    }
}

/* When the heads do not divide among the threads: threads own (b,a) pairs and keep every pair's dpc,
 * dpp in dPc [B,A,Tq,R], dPp [B,A,R,Tk]; the tables' sums run afterwards, heads in parallel, b in
 * increasing order (the same order as da_backward_heads: the results are bitwise equal).
 * scratch: nt · Tq · Tk reals (dS), twice that when pd is remade (dS, pd). */
static void da_backward_pairs(const DABack *x, const DAGeom *g, real *scratch, real *dPc, real *dPp, int par) {
    const int Tq = g->Tq, Tk = g->Tk, R = g->R, A = g->A, per = da_remakes_pd(x) ? 2 : 1;
    const long nba = (long)g->B * A;
#pragma omp parallel for schedule(static) if (par)
    for (long ba = 0; ba < nba; ba++) {
        real *dS = scratch + (long)omp_get_thread_num() * per * Tq * Tk;
        da_backward_pair(x, g, ba, dS, dPc ? dPc + ba * Tq * R : NULL, dPp ? dPp + ba * Tk * R : NULL, dS + (long)Tq * Tk);
    }
    /* heads own disjoint rows of the tables, so they run in parallel (each gemm then runs single-threaded
     * inside the region instead of as B·A tiny multi-threaded BLAS calls) */
#pragma omp parallel for schedule(static) if (A > 1 && par)
    for (int a = 0; a < A; a++)
        for (int b = 0; b < g->B; b++) {
            const long ba = (long)b * A + a;
            da_backward_tables(x, g, ba, dPc ? dPc + ba * Tq * R : NULL, dPp ? dPp + ba * Tk * R : NULL);
        }
}

/* Saved for the backward (arena): the relative index (copied) and, with a fused dropout, the keep
 * mask and the undropped probabilities (the node's output is then the dropped tensor). */
typedef struct {
    int32_t *c;
    uint8_t *keep; /* NULL: no fused dropout */
    real p;        /* its rate */
    Tensor *P;
    int merge_runs; /* da_check_index's answer for c */
    int32_t *run_off, *run_start; /* da_runs of c */
} DASaved;

/* The runs of equal c(i,j) (neighbouring j) of every row of c [Tq, Tk], in the arena: row i's runs start
 * at columns run_start[run_off[i] .. run_off[i + 1]), the first at column 0. */
static void da_runs(Tape *t, const int32_t *c, int Tq, int Tk, int32_t **run_off, int32_t **run_start) {
    int32_t *off = arena_alloc(&t->arena, (size_t)(Tq + 1) * sizeof(int32_t));
    off[0] = 0;
    for (int i = 0; i < Tq; i++) {
        const int32_t *ci = c + (long)i * Tk;
        int n = Tk > 0;
        for (int j = 1; j < Tk; j++) n += ci[j] != ci[j - 1];
        off[i + 1] = off[i] + n;
    }
    int32_t *start = arena_alloc(&t->arena, (size_t)(off[Tq] > 0 ? off[Tq] : 1) * sizeof(int32_t));
    for (int i = 0; i < Tq; i++) {
        const int32_t *ci = c + (long)i * Tk;
        int32_t *s = start + off[i];
        if (Tk > 0) *s++ = 0;
        for (int j = 1; j < Tk; j++)
            if (ci[j] != ci[j - 1]) *s++ = j;
    }
    *run_off = off;
    *run_start = start;
}

/* The context's v [B, Tk, A·D] next to q, k [B, T, A·D]: a tensor of its own (its gradient buffer is
 * written pair by pair). */
static void da_check_v(const DAGeom *g, const Tensor *q, const Tensor *k, const Tensor *v) {
    char s1[64], s2[64];
    const char *op = "disentangled_attention_context";
    OP_CHECK(v && v->ndim == 3 && v->shape[0] == g->B && v->shape[1] == g->Tk && v->shape[2] == g->A * g->D, op,
             "v %s must be [B, Tk, A·D] like k %s", v ? shape_str(v, s1, 64) : "NULL", shape_str(k, s2, 64));
    OP_CHECK(v != q && v != k, op, "v must be a tensor of its own, not q or k");
}

/* The op; with dropout_site, the dropout of its output fused in; with v (heads > 0), also the context
 * Pd · v, which is then the output (ops_attention.h). */
static Tensor *attention(Tape *t, Tensor *q, Tensor *k, int heads, Tensor *qr, Tensor *kr, const int32_t *c_idx, int terms,
                         real scale, const int32_t *qmask, const int32_t *kmask, int dropout_site, real pdrop, Tensor *v) {
    DAGeom g = da_geometry(q, k, heads, qr, kr, c_idx, terms);
    if (v) da_check_v(&g, q, k, v);
    const int use_pos = (terms & (ATT_C2P | ATT_P2C)) != 0;
    const int merge_runs = use_pos ? da_check_index(c_idx, g.Tq, g.Tk, g.R) : 0;
    const int shape[4] = {g.B, g.A, g.Tq, g.Tk};
    Tensor *in[5] = {q, k, (terms & ATT_P2C) ? qr : NULL, (terms & ATT_C2P) ? kr : NULL, v};
    const int record = tape_records(t, 5, in); /* a node (and so P for the backward) will be kept */
    Tensor pshape = {.ndim = 4, .shape = {g.B, g.A, g.Tq, g.Tk}, .n = (long)g.B * g.A * g.Tq * g.Tk, .name = "attn_probs"};
    Tensor *p = &pshape, *out = NULL;
    DADrop dr = {0};
    DACtx cx = {0};
    if (dropout_site) {
        const int64_t off = dropout_begin(t, p, pdrop, 1, &dr.stream);
        if (off >= 0) dr = (DADrop){NULL, arena_alloc(&t->arena, (size_t)p->n), pdrop, t->seed, dr.stream, off};
    }
    /* P is an output, or kept for the backward; the context of a forward that records nothing and has no
     * dropout mask to keep computes each pair's P in scratch and writes only the context */
    if (!v || record || dr.keep) p = tape_tensor(t, 4, shape, "attn_probs");
    out = p;
    if (v) {
        out = tape_tensor(t, 3, (const int[]){g.B, g.Tq, g.A * g.D}, "attention_context");
        cx = (DACtx){v->data, out->data};
    } else if (dr.keep) {
        out = tape_tensor(t, 4, shape, "attn_probs_dropout");
        dr.Pd = out->data;
    }
    int32_t *run_off = NULL, *run_start = NULL; /* the runs of c: the forward's score pass and the backward read them */
    if (use_pos) da_runs(t, c_idx, g.Tq, g.Tk, &run_off, &run_start);
    const size_t sbytes = (size_t)omp_get_max_threads() * da_forward_scratch(&g, v && dr.keep, p == &pshape) * sizeof(real);
    real *scratch = sbytes ? tape_scratch(t, sbytes, 0) : NULL;
    disentangled_attention_forward(p == &pshape ? NULL : p->data, scratch, q->data, k->data, (terms & ATT_P2C) ? qr->data : NULL,
                                   (terms & ATT_C2P) ? kr->data : NULL, c_idx, run_off, run_start, qmask, kmask, &g, scale, &dr,
                                   &cx);
    tape_scratch_release(t, scratch, sbytes);
    TapeNode *nd = tape_record(t, v ? OP_DISENTANGLED_ATTENTION_CONTEXT : OP_DISENTANGLED_ATTENTION, out, v ? 5 : 4, in);
    if (nd) {
        DASaved *sv = arena_alloc(&t->arena, sizeof *sv);
        *sv = (DASaved){NULL, dr.keep, dr.p, p, merge_runs, run_off, run_start};
        if (use_pos) {
            sv->c = arena_alloc(&t->arena, (size_t)g.Tq * g.Tk * sizeof(int32_t));
            memcpy(sv->c, c_idx, (size_t)g.Tq * g.Tk * sizeof(int32_t));
        }
        nd->ctx = sv;
        nd->iarg[0] = terms;
        nd->iarg[1] = heads;
        nd->farg[0] = scale;
    }
    return out;
}

Tensor *op_disentangled_attention_probs(Tape *t, Tensor *q, Tensor *k, Tensor *qr, Tensor *kr, const int32_t *c_idx,
                                        int terms, real scale, const int32_t *qmask, const int32_t *kmask) {
    return attention(t, q, k, 0, qr, kr, c_idx, terms, scale, qmask, kmask, 0, 0, NULL);
}

Tensor *op_disentangled_attention_dropout(Tape *t, Tensor *q, Tensor *k, Tensor *qr, Tensor *kr, const int32_t *c_idx,
                                          int terms, real scale, const int32_t *qmask, const int32_t *kmask, real p) {
    return attention(t, q, k, 0, qr, kr, c_idx, terms, scale, qmask, kmask, 1, p, NULL);
}

Tensor *op_disentangled_attention_dropout_bth(Tape *t, Tensor *q, Tensor *k, int heads, Tensor *qr, Tensor *kr,
                                              const int32_t *c_idx, int terms, real scale, const int32_t *qmask,
                                              const int32_t *kmask, real p) {
    OP_CHECK(heads > 0, "disentangled_attention", "heads = %d: need >= 1", heads);
    return attention(t, q, k, heads, qr, kr, c_idx, terms, scale, qmask, kmask, 1, p, NULL);
}

Tensor *op_disentangled_attention_context(Tape *t, Tensor *q, Tensor *k, Tensor *v, int heads, Tensor *qr, Tensor *kr,
                                          const int32_t *c_idx, int terms, real scale, const int32_t *qmask,
                                          const int32_t *kmask, real p) {
    OP_CHECK(heads > 0, "disentangled_attention_context", "heads = %d: need >= 1", heads);
    return attention(t, q, k, heads, qr, kr, c_idx, terms, scale, qmask, kmask, 1, p, v);
}

/* Both ops' backward; v is the fused context's input (NULL: the node's output is P or Pd). */
static void da_backward_node(Tape *t, TapeNode *nd, Tensor *v) {
    Tensor *q = nd->in[0], *k = nd->in[1], *qr = nd->in[2], *kr = nd->in[3];
    const int terms = (int)nd->iarg[0];
    const DASaved *sv = nd->ctx;
    const int32_t *c = sv->c;
    DAGeom g = da_geometry(q, k, (int)nd->iarg[1], qr, kr, c, terms);
    /* grads first: they outlive the call; the scratch goes back to the pool at the end */
    int dq_fresh = 0, dk_fresh = 0;
    real *dq = q->requires_grad ? tape_grad_put(t, q, &dq_fresh) : NULL;
    real *dk = k->requires_grad ? (k == q ? tape_grad(t, k) : tape_grad_put(t, k, &dk_fresh)) : NULL;
    if (k == q && dq_fresh) { /* one tensor as q and k: its buffer is written in parts, so it starts at zero */
        zero_fill(dq, (size_t)q->n * sizeof(real));
        dq_fresh = 0;
    }
    real *dqr = qr && qr->requires_grad ? tape_grad(t, qr) : NULL, *dkr = kr && kr->requires_grad ? tape_grad(t, kr) : NULL;
    int dv_fresh = 0;
    real *dv = v && v->requires_grad ? tape_grad_put(t, v, &dv_fresh) : NULL;
    const DABack x = {dq, dk, dqr, dkr, dv, dq_fresh, dk_fresh, dv_fresh, v ? NULL : nd->out->grad, sv->P->data, q->data,
                      k->data, qr ? qr->data : NULL, kr ? kr->data : NULL, v ? v->data : NULL, v ? nd->out->grad : NULL, c,
                      sv->keep, (real)nd->farg[0], sv->keep ? 1 / (1 - sv->p) : 1, (terms & ATT_C2P) && sv->merge_runs,
                      sv->run_off, sv->run_start};
    const long nba = (long)g.B * g.A;
    const int par = nba > 1 && nba * g.Tq * g.Tk >= 4096, nt = par ? omp_get_max_threads() : 1;
    if (da_by_heads(&g, nt) && !g_attention_by_pairs) {
        const size_t sbytes = (size_t)nt * da_pair_scratch(&x, &g) * sizeof(real);
        real *scratch = tape_scratch(t, sbytes, 0);
        da_backward_heads(&x, &g, scratch, par);
        tape_scratch_release(t, scratch, sbytes);
        return;
    }
    const size_t sbytes = (size_t)nt * g.Tq * g.Tk * (da_remakes_pd(&x) ? 2 : 1) * sizeof(real);
    const size_t cbytes = (size_t)nba * g.Tq * g.R * sizeof(real), pbytes = (size_t)nba * g.Tk * g.R * sizeof(real);
    real *scratch = tape_scratch(t, sbytes, 0);
    real *dPc = (terms & ATT_C2P) ? tape_scratch(t, cbytes, 0) : NULL;
    real *dPp = (terms & ATT_P2C) ? tape_scratch(t, pbytes, 0) : NULL;
    da_backward_pairs(&x, &g, scratch, dPc, dPp, par);
    tape_scratch_release(t, dPp, pbytes);
    tape_scratch_release(t, dPc, cbytes);
    tape_scratch_release(t, scratch, sbytes);
}

void disentangled_attention_backward_node(Tape *t, TapeNode *nd) { da_backward_node(t, nd, NULL); }

void disentangled_attention_context_backward_node(Tape *t, TapeNode *nd) { da_backward_node(t, nd, nd->in[4]); }

/* ---------------- the context P · V, heads interleaved ---------------- */

typedef struct {
    int B, A, Tq, Tk, D;
} CtxGeom;

static CtxGeom ctx_geometry(const Tensor *p, const Tensor *v) {
    char s1[64], s2[64];
    const char *op = "attention_context";
    OP_CHECK(p && v, op, "NULL input");
    OP_CHECK(p->ndim == 4 && v->ndim == 3, op, "p %s must be [B, A, Tq, Tk] and v %s [B, Tk, A·D]", shape_str(p, s1, 64),
             shape_str(v, s2, 64));
    const CtxGeom g = {p->shape[0], p->shape[1], p->shape[2], p->shape[3], v->shape[2] / (p->shape[1] > 0 ? p->shape[1] : 1)};
    OP_CHECK(v->shape[0] == g.B && v->shape[1] == g.Tk && g.A > 0 && v->shape[2] == g.A * g.D && g.D > 0, op,
             "p %s and v %s: need v [B, Tk, A·D] for p [B, A, Tq, Tk]", shape_str(p, s1, 64), shape_str(v, s2, 64));
    return g;
}

Tensor *op_attention_context(Tape *t, Tensor *p, Tensor *v) {
    const CtxGeom g = ctx_geometry(p, v);
    const int H = g.A * g.D, shape[3] = {g.B, g.Tq, H};
    Tensor *out = tape_tensor(t, 3, shape, "attention_context");
    const int nba = g.B * g.A, par = nba >= omp_get_max_threads();
#pragma omp parallel for schedule(static) if (par)
    for (int ba = 0; ba < nba; ba++) {
        const int b = ba / g.A, a = ba % g.A;
        gemm(0, 0, g.Tq, g.D, g.Tk, 1, p->data + (long)ba * g.Tq * g.Tk, g.Tk, v->data + (long)b * g.Tk * H + (long)a * g.D, H, 0,
             out->data + (long)b * g.Tq * H + (long)a * g.D, H);
    }
    Tensor *in[2] = {p, v};
    tape_record(t, OP_ATTENTION_CONTEXT, out, 2, in);
    return out;
}

/* dP[b,a] = dctx[b,a] · v[b,a]^T;  dv[b,a] = P[b,a]^T · dctx[b,a]  (pair (b,a) of ctx and v: rows of
 * [B, T, A·D] at column a·D, D wide; fresh buffers are assigned: gemm beta 0) */
void attention_context_backward_node(Tape *t, TapeNode *nd) {
    Tensor *p = nd->in[0], *v = nd->in[1];
    const CtxGeom g = ctx_geometry(p, v);
    const int H = g.A * g.D;
    int fp = 0, fv = 0;
    real *dp = p->requires_grad ? tape_grad_put(t, p, &fp) : NULL;
    real *dv = v->requires_grad ? tape_grad_put(t, v, &fv) : NULL;
    const real *dout = nd->out->grad;
    const int nba = g.B * g.A, par = nba >= omp_get_max_threads();
#pragma omp parallel for schedule(static) if (par)
    for (int ba = 0; ba < nba; ba++) {
        const int b = ba / g.A, a = ba % g.A;
        const long pv = (long)b * g.Tk * H + (long)a * g.D, pc = (long)b * g.Tq * H + (long)a * g.D;
        if (dp) gemm(0, 1, g.Tq, g.Tk, g.D, 1, dout + pc, H, v->data + pv, H, fp ? 0 : 1, dp + (long)ba * g.Tq * g.Tk, g.Tk);
        if (dv) gemm(1, 0, g.Tk, g.D, g.Tq, 1, p->data + (long)ba * g.Tq * g.Tk, g.Tk, dout + pc, H, fv ? 0 : 1, dv + pv, H);
    }
}
