/* electra.c — generator, discriminator and embedding sharing; see electra.h. */
#include "model/electra.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "autograd/rmath.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "model/init.h"

static Tensor *add_param(ParamSet *ps, const char *name, int ndim, int d0, int d1) {
    const int shape[2] = {d0, d1};
    return params_add(ps, name, ndim, shape);
}

/* Registers every parameter of the pair (no storage yet). */
static void electra_register(Electra *m, const ModelConfig *cfg) {
    const int H = cfg->hidden_size, V = cfg->vocab_size, P = cfg->max_position_embeddings;
    params_init(&m->ps);

    /* generator: encoder + LM head (E = H in V3, so the dense is H -> H) */
    encoder_register(&m->gen, &m->ps, cfg, cfg->gen_num_hidden_layers, "generator.deberta.", 0);
    m->lm.dense_w = add_param(&m->ps, "generator.lm_predictions.lm_head.dense.weight", 2, H, H);
    m->lm.dense_b = add_param(&m->ps, "generator.lm_predictions.lm_head.dense.bias", 1, H, 0);
    m->lm.ln_g = add_param(&m->ps, "generator.lm_predictions.lm_head.LayerNorm.weight", 1, H, 0);
    m->lm.ln_b = add_param(&m->ps, "generator.lm_predictions.lm_head.LayerNorm.bias", 1, H, 0);
    m->lm.bias = add_param(&m->ps, "generator.lm_predictions.lm_head.bias", 1, V, 0);
    m->n_gen_params = m->ps.n;

    /* discriminator: encoder (+ its own or delta embeddings) + RTD head */
    int flags = cfg->embedding_sharing == SHARE_NES ? 0 : (ENC_NO_WORD | ENC_NO_POSITION);
    encoder_register(&m->disc, &m->ps, cfg, cfg->num_hidden_layers, "discriminator.deberta.", flags);
    if (cfg->embedding_sharing == SHARE_GDES) {
        m->word_delta = add_param(&m->ps, "discriminator.deberta.embeddings.word_embeddings._weight", 2, V, H);
        m->pos_delta = add_param(&m->ps, "discriminator.deberta.embeddings.position_embeddings._weight", 2, P, H);
    }
    m->rtd.dense_w = add_param(&m->ps, "discriminator.mask_predictions.dense.weight", 2, H, H);
    m->rtd.dense_b = add_param(&m->ps, "discriminator.mask_predictions.dense.bias", 1, H, 0);
    m->rtd.ln_g = add_param(&m->ps, "discriminator.mask_predictions.LayerNorm.weight", 1, H, 0);
    m->rtd.ln_b = add_param(&m->ps, "discriminator.mask_predictions.LayerNorm.bias", 1, H, 0);
    m->rtd.cls_w = add_param(&m->ps, "discriminator.mask_predictions.classifier.weight", 2, 1, H);
    m->rtd.cls_b = add_param(&m->ps, "discriminator.mask_predictions.classifier.bias", 1, 1, 0);
}

void electra_build(Electra *m, const ModelConfig *cfg, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    if (cfg->embedding_sharing == SHARE_ES && cfg->training_mode != TRAIN_JOINT)
        fatal("config: embedding_sharing es needs training_mode joint (in decoupled mode the generator step would "
              "discard the RTD gradient of the shared embedding; add --training_mode joint)");
    electra_register(m, cfg);
    params_finalize(&m->ps);
    model_init_params(&m->ps, cfg->initializer_range, seed);
}

double electra_param_slots(const ModelConfig *cfg) {
    Electra m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg;
    electra_register(&m, cfg);
    double n = 0;
    for (int i = 0; i < m.ps.n; i++) n += (double)((m.ps.params[i]->n + 15) & ~15L); /* as params_finalize lays them out */
    encoder_free(&m.gen);
    encoder_free(&m.disc);
    params_free(&m.ps);
    return n;
}

void electra_free(Electra *m) {
    encoder_free(&m->gen);
    encoder_free(&m->disc);
    params_free(&m->ps);
    memset(m, 0, sizeof *m);
}

static void check_batch(const Electra *m, const ElectraInput *b) {
    const int V = m->cfg.vocab_size;
    for (long i = 0; i < (long)b->B * b->T; i++) {
        if (b->input_ids[i] < 0 || b->input_ids[i] >= V)
            fatal("batch: token id %d at position %ld is outside the vocabulary [0, %d)", b->input_ids[i], i, V);
        if (b->labels[i] < 0 || b->labels[i] >= V)
            fatal("batch: label %d at position %ld is outside the vocabulary [0, %d)", b->labels[i], i, V);
    }
}

Tensor *generator_forward(Tape *t, const Electra *m, const ElectraInput *b, GenOut *out) {
    const ModelConfig *c = &m->cfg;
    const int B = b->B, T = b->T, H = c->hidden_size;
    check_batch(m, b);
    memset(out, 0, sizeof *out);
    out->enc.layers = NULL;
    t->row0 = b->row0;
    t->rows = B;
    /* With EMD the last layer's own output is never read (the EMD runs that layer on layer L−2's
     * output): unless asked for it, the forward stops before it, its dropout draws skipped over. */
    const int L = m->gen.n_layers, skip_last = c->use_emd && L >= 2 && !m->gen_all_layers;
    Tensor *last = encoder_forward_first(t, &m->gen, NULL, NULL, b->input_ids, b->attention_mask, B, T, skip_last ? L - 1 : L,
                                         &out->enc);

    Tensor *q = last;
    if (c->use_emd) {
        Tensor *hs = L >= 2 ? out->enc.layers[L - 2] : out->enc.emb;
        Tensor *z = encoder_positions(t, &m->gen, NULL, NULL, B, T);
        q = op_add(t, z, hs);
        for (int pass = 0; pass < 2; pass++) {
            q = layer_forward(t, c, &m->gen.layers[L - 1], q, hs, &out->enc.rel);
            out->emd[pass] = q;
        }
    }

    /* masked rows, row-major */
    int n = 0;
    for (long i = 0; i < (long)B * T; i++) n += b->labels[i] > 0;
    if (n == 0) fatal("batch: no masked token (labels are all 0); the MLM loss is undefined");
    out->n_masked = n;
    out->rows = arena_alloc(&t->arena, (size_t)n * sizeof(int32_t));
    out->targets = arena_alloc(&t->arena, (size_t)n * sizeof(int32_t));
    for (long i = 0, k = 0; i < (long)B * T; i++)
        if (b->labels[i] > 0) {
            out->rows[k] = (int32_t)i;
            out->targets[k++] = b->labels[i];
        }
    const int s2[2] = {B * T, H};
    Tensor *h = op_index_select(t, op_reshape(t, q, 2, s2), out->rows, n);        /* [N, H] */
    Tensor *u = op_bias_gelu(t, op_linear(t, h, m->lm.dense_w, NULL), m->lm.dense_b);
    u = op_layernorm(t, u, m->lm.ln_g, m->lm.ln_b, (real)c->layer_norm_eps);
    out->logits = op_linear(t, u, m->gen.word, m->lm.bias);                        /* [N, V], tied */
    out->loss = op_cross_entropy(t, out->logits, out->targets);
    return out->loss;
}

/* Inverse-CDF sampling from softmax(row): the first v whose running sum of exp(row[v] − max) exceeds
 * u·z, in double.  The pass that computes z keeps the running sum at the end of every block of vocabulary
 * ids, so the search starts in the right block from that block's starting sum: the same additions in the
 * same order as a second pass from v = 0.  The exps of a block are computed together (in the float build a
 * loop over libmvec's vector exp, within 4 ulp of the scalar one: rmath.h) and summed in increasing v; both
 * passes compute a block's exps the same way, so the search sees the values the sum saw. */
enum { SAMPLE_BLOCKS = 2048, SAMPLE_CHUNK = 64 };

/* acc + the running sum of exp(row[v] − mx) over v in [v0, v1), in increasing v.  With pick != NULL it stops
 * at the first v where the sum exceeds u and sets *pick = v (else leaves *pick). */
static double sample_block(const real *row, double mx, int v0, int v1, double acc, double u, int *pick) {
    double e[SAMPLE_CHUNK];
    for (int c0 = v0; c0 < v1; c0 += SAMPLE_CHUNK) {
        const int n = v1 - c0 < SAMPLE_CHUNK ? v1 - c0 : SAMPLE_CHUNK;
#pragma omp simd
        for (int v = 0; v < n; v++) e[v] = exp((double)row[c0 + v] - mx);
        for (int v = 0; v < n; v++) {
            acc += e[v];
            if (pick && u < acc) {
                *pick = c0 + v;
                return acc;
            }
        }
    }
    return acc;
}

void electra_sample(const GenOut *g, const ElectraInput *b, uint64_t seed, uint64_t step, int32_t *replaced) {
    const int V = (int)g->logits->shape[1];
    const int bs = V / SAMPLE_BLOCKS + 1 > 32 ? V / SAMPLE_BLOCKS + 1 : 32, nb = (V + bs - 1) / bs; /* nb <= SAMPLE_BLOCKS */
    memcpy(replaced, b->input_ids, (size_t)b->B * b->T * sizeof(int32_t));
#pragma omp parallel for schedule(static)
    for (int k = 0; k < g->n_masked; k++) {
        const real *row = g->logits->data + (long)k * V;
        real m = row[0];
#pragma omp simd reduction(max : m)
        for (int v = 1; v < V; v++) m = row[v] > m ? row[v] : m;
        const double mx = m;
        double z = 0, end[SAMPLE_BLOCKS]; /* end[i]: the running sum after block i */
        for (int i = 0; i < nb; i++) {
            const int v1 = (i + 1) * bs < V ? (i + 1) * bs : V;
            z = end[i] = sample_block(row, mx, i * bs, v1, z, 0, NULL);
        }
        const double u = rng_uniform(seed, rng_stream(RNG_SAMPLE, step, 0), (uint64_t)(b->masked0 + k)) * z;
        int pick = V - 1, i = 0;
        while (i < nb && !(u < end[i])) i++;
        if (i < nb) sample_block(row, mx, i * bs, (i + 1) * bs < V ? (i + 1) * bs : V, i > 0 ? end[i - 1] : 0, u, &pick);
        replaced[g->rows[k]] = pick;
    }
}

Tensor *discriminator_forward(Tape *t, const Electra *m, const ElectraInput *b, const int32_t *replaced, DiscOut *out) {
    const ModelConfig *c = &m->cfg;
    const int B = b->B, T = b->T, H = c->hidden_size;
    memset(out, 0, sizeof *out);
    for (long i = 0; i < (long)B * T; i++)
        if (replaced[i] < 0 || replaced[i] >= c->vocab_size)
            fatal("batch: replaced id %d at position %ld is outside the vocabulary [0, %d)", replaced[i], i, c->vocab_size);

    Tensor *table = NULL; /* NES: the discriminator's own */
    if (c->embedding_sharing == SHARE_GDES) table = op_add(t, op_detach(t, m->gen.word), m->word_delta);
    else if (c->embedding_sharing == SHARE_ES) table = m->gen.word;
    Tensor *pos = NULL; /* absolute positions at the discriminator's input (a control; V3 has none) */
    if (c->disc_position_biased_input) {
        if (c->embedding_sharing == SHARE_GDES) pos = op_add(t, op_detach(t, m->gen.position), m->pos_delta);
        else if (c->embedding_sharing == SHARE_ES) pos = m->gen.position;
        else pos = m->disc.position;
    }
    t->row0 = b->row0;
    t->rows = B;
    Tensor *hL = encoder_forward_pos(t, &m->disc, table, pos, replaced, b->attention_mask, B, T, &out->enc);

    /* s = LN(hL + hL[:, 0]) : the [CLS] row of each sequence added to each of its positions */
    int32_t *cls_rows = arena_alloc(&t->arena, (size_t)B * T * sizeof(int32_t));
    for (int bb = 0; bb < B; bb++)
        for (int i = 0; i < T; i++) cls_rows[bb * T + i] = bb * T;
    const int s2[2] = {B * T, H};
    Tensor *h2 = op_reshape(t, hL, 2, s2);
    Tensor *s = op_add(t, h2, op_index_select(t, h2, cls_rows, B * T));
    s = op_layernorm(t, s, m->rtd.ln_g, m->rtd.ln_b, (real)c->layer_norm_eps);
    s = op_bias_gelu(t, op_linear(t, s, m->rtd.dense_w, NULL), m->rtd.dense_b);
    Tensor *logit = op_linear(t, s, m->rtd.cls_w, m->rtd.cls_b);                   /* [B·T, 1] */
    const int sbt[2] = {B, T};
    out->logits = op_reshape(t, logit, 2, sbt);

    out->y = arena_alloc(&t->arena, (size_t)B * T * sizeof(int32_t));
    for (long i = 0; i < (long)B * T; i++) out->y[i] = b->labels[i] > 0 && replaced[i] != b->labels[i];
    out->bce = op_bce_logits(t, out->logits, out->y, b->attention_mask);
    out->loss = op_scale(t, out->bce, (real)c->rtd_lambda);
    return out->loss;
}

long mlm_correct(const GenOut *g) {
    const int V = g->logits->shape[1];
    long c = 0;
    for (int k = 0; k < g->n_masked; k++) {
        const real *row = g->logits->data + (long)k * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (row[v] > row[best]) best = v;
        c += best == g->targets[k];
    }
    return c;
}

long rtd_correct(const DiscOut *d, const int32_t *attention_mask, long n) {
    long c = 0;
    for (long i = 0; i < n; i++)
        if (attention_mask[i]) c += (d->logits->data[i] > 0) == (d->y[i] != 0);
    return c;
}
