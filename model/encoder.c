/* encoder.c — embeddings, post-LN layer, encoder; parameter registration.  See encoder.h. */
#include "model/encoder.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"

/* ---------------- registration ---------------- */

static Tensor *reg(ParamSet *ps, const char *prefix, const char *name, int d0, int d1) {
    char full[512];
    if (snprintf(full, sizeof full, "%s%s", prefix, name) >= (int)sizeof full) fatal("parameter name %s%s is too long", prefix, name);
    const int shape[2] = {d0, d1};
    return params_add(ps, full, d1 > 0 ? 2 : 1, shape);
}

void encoder_register(Encoder *e, ParamSet *ps, const ModelConfig *cfg, int n_layers, const char *prefix, int flags) {
    memset(e, 0, sizeof *e);
    e->cfg = *cfg;
    e->n_layers = n_layers;
    if (strlen(prefix) >= sizeof e->prefix) fatal("encoder prefix '%s' is too long", prefix);
    strcpy(e->prefix, prefix);
    const int H = cfg->hidden_size, AD = cfg->num_attention_heads * cfg->attention_head_size, FF = cfg->intermediate_size;
    char p[128], n[128];
    if (snprintf(p, sizeof p, "%sembeddings.", prefix) >= (int)sizeof p) fatal("encoder prefix '%s' is too long", prefix);
    if (!(flags & ENC_NO_WORD)) e->word = reg(ps, p, "word_embeddings.weight", cfg->vocab_size, H);
    if (!(flags & ENC_NO_POSITION)) e->position = reg(ps, p, "position_embeddings.weight", cfg->max_position_embeddings, H);
    e->emb_ln_g = reg(ps, p, "LayerNorm.weight", H, 0);
    e->emb_ln_b = reg(ps, p, "LayerNorm.bias", H, 0);
    e->layers = xcalloc(n_layers > 0 ? n_layers : 1, sizeof(LayerParams));
    for (int l = 0; l < n_layers; l++) {
        LayerParams *L = &e->layers[l];
        if (snprintf(n, sizeof n, "%sencoder.layer.%d.", prefix, l) >= (int)sizeof n) fatal("encoder prefix '%s' is too long", prefix);
        L->att.wq = reg(ps, n, "attention.self.query_proj.weight", AD, H);
        L->att.bq = reg(ps, n, "attention.self.query_proj.bias", AD, 0);
        L->att.wk = reg(ps, n, "attention.self.key_proj.weight", AD, H);
        L->att.bk = reg(ps, n, "attention.self.key_proj.bias", AD, 0);
        L->att.wv = reg(ps, n, "attention.self.value_proj.weight", AD, H);
        L->att.bv = reg(ps, n, "attention.self.value_proj.bias", AD, 0);
        L->att.wo = reg(ps, n, "attention.output.dense.weight", H, AD);
        L->att.bo = reg(ps, n, "attention.output.dense.bias", H, 0);
        L->att.ln_g = reg(ps, n, "attention.output.LayerNorm.weight", H, 0);
        L->att.ln_b = reg(ps, n, "attention.output.LayerNorm.bias", H, 0);
        L->w1 = reg(ps, n, "intermediate.dense.weight", FF, H);
        L->b1 = reg(ps, n, "intermediate.dense.bias", FF, 0);
        L->w2 = reg(ps, n, "output.dense.weight", H, FF);
        L->b2 = reg(ps, n, "output.dense.bias", H, 0);
        L->ln_g = reg(ps, n, "output.LayerNorm.weight", H, 0);
        L->ln_b = reg(ps, n, "output.LayerNorm.bias", H, 0);
    }
    if (snprintf(p, sizeof p, "%sencoder.", prefix) >= (int)sizeof p) fatal("encoder prefix '%s' is too long", prefix);
    e->rel = reg(ps, p, "rel_embeddings.weight", config_rel_rows(cfg), H);
    e->rel_ln_g = reg(ps, p, "LayerNorm.weight", H, 0);
    e->rel_ln_b = reg(ps, p, "LayerNorm.bias", H, 0);
}

int encoder_param_layer(const char *name, const char *prefix) {
    static const char mid[] = "encoder.layer.";
    const size_t np = strlen(prefix);
    if (strncmp(name, prefix, np) || strncmp(name + np, mid, sizeof mid - 1)) return -1;
    const char *d = name + np + sizeof mid - 1;
    int layer = 0, digits = 0;
    for (; *d >= '0' && *d <= '9' && digits < 9; d++, digits++) layer = layer * 10 + (*d - '0');
    return digits && *d == '.' ? layer : -1;
}

void encoder_free(Encoder *e) {
    free(e->layers);
    e->layers = NULL;
}

/* ---------------- forward ---------------- */

Tensor *layer_forward(Tape *t, const ModelConfig *cfg, const LayerParams *p, Tensor *qin, Tensor *kv, const RelContext *rc) {
    const size_t mark = t->nograd > 0 ? tape_mark(t) : 0;
    Tensor *a = attention_forward(t, cfg, &p->att, qin, kv, rc);                 /* [B, T, H] */
    if (t->nograd > 0) a = tape_keep_only(t, mark, a); /* recording nothing: q, k, v, the context go back */
    Tensor *f = op_linear_gelu(t, a, p->w1, p->b1);                              /* GELU(a·W1^T + b1)  [B, T, I] */
    Tensor *y = op_linear(t, f, p->w2, p->b2);                                   /* [B, T, H] */
    /* LN(Dropout_h(y) + a): one op (op_dropout_add_layernorm: the three ops' values and gradients) */
    return op_dropout_add_layernorm(t, y, (real)cfg->hidden_dropout_prob, a, p->ln_g, p->ln_b, (real)cfg->layer_norm_eps);
}

/* layer_forward in a no-grad scope whose caller reads x (= qin = kv) no more: the attention block's output
 * is written over x and the layer's over that (op_dropout_add_layernorm_over), so each block's
 * intermediates go back to the arena with nothing copied (tape_keep_only). */
static Tensor *layer_forward_over(Tape *t, const ModelConfig *cfg, const LayerParams *p, Tensor *x, const RelContext *rc) {
    const size_t mark = tape_mark(t);
    Tensor *a = tape_keep_only(t, mark, attention_forward_over(t, cfg, &p->att, x, x, rc)); /* [B, T, H] */
    Tensor *f = op_linear_gelu(t, a, p->w1, p->b1);                                        /* [B, T, I] */
    Tensor *y = op_linear(t, f, p->w2, p->b2);                                             /* [B, T, H] */
    return op_dropout_add_layernorm_over(t, y, (real)cfg->hidden_dropout_prob, a, p->ln_g, p->ln_b, (real)cfg->layer_norm_eps);
}

/* x0 = Dropout_h(LN_emb(table[ids]) ⊙ m)  [B, T, H] */
static Tensor *embeddings_forward(Tape *t, const Encoder *e, Tensor *table, Tensor *pos_table, const int32_t *ids, const int32_t *mask, int B, int T) {
    const ModelConfig *c = &e->cfg;
    const int H = c->hidden_size, s3[3] = {B, T, H};
    if (!table || table->ndim != 2 || table->shape[0] != c->vocab_size || table->shape[1] != H)
        fatal("encoder %s: the word-embedding table must be [%d, %d]", e->prefix, c->vocab_size, H);
    Tensor *x = op_reshape(t, op_embedding(t, table, ids, B * T, c->pad_id), 3, s3);
    if (pos_table) x = op_add(t, x, encoder_positions(t, e, pos_table, NULL, B, T)); /* position_biased_input */
    x = op_layernorm(t, x, e->emb_ln_g, e->emb_ln_b, (real)c->layer_norm_eps);
    if (mask) { /* MaskedLayerNorm: padded positions set to 0 */
        Tensor *m = tape_tensor(t, 3, s3, "emb_mask");
        for (long r = 0; r < (long)B * T; r++)
            for (int h = 0; h < H; h++) m->data[r * H + h] = mask[r] ? 1 : 0;
        x = op_mul(t, x, m);
    }
    return op_dropout_batch(t, x, (real)c->hidden_dropout_prob);
}

/* The embeddings, the shared relative-position context and out->layers (all NULL yet).  give_back (a no-grad
 * forward whose caller reads no EncoderOut): the embeddings' intermediates go back to the arena. */
static void encoder_inputs(Tape *t, const Encoder *e, Tensor *word_table, Tensor *input_pos_table, const int32_t *ids,
                           const int32_t *mask, int B, int T, EncoderOut *out, int give_back) {
    if (T > e->cfg.max_position_embeddings)
        fatal("encoder %s: sequence length %d exceeds max_position_embeddings %d", e->prefix, T, e->cfg.max_position_embeddings);
    const size_t mark = give_back ? tape_mark(t) : 0;
    out->emb = embeddings_forward(t, e, word_table ? word_table : e->word, input_pos_table, ids, mask, B, T);
    if (give_back) out->emb = tape_keep_only(t, mark, out->emb);
    relctx_build(t, &out->rel, &e->cfg, e->rel, e->rel_ln_g, e->rel_ln_b, mask, B, T);
    out->layers = arena_calloc(&t->arena, (size_t)(e->n_layers > 0 ? e->n_layers : 1) * sizeof(Tensor *));
}

Tensor *encoder_forward(Tape *t, const Encoder *e, Tensor *word_table, const int32_t *ids, const int32_t *mask, int B, int T,
                        EncoderOut *out) {
    return encoder_forward_pos(t, e, word_table, NULL, ids, mask, B, T, out);
}

Tensor *encoder_forward_pos(Tape *t, const Encoder *e, Tensor *word_table, Tensor *input_pos_table, const int32_t *ids,
                            const int32_t *mask, int B, int T, EncoderOut *out) {
    return encoder_forward_first(t, e, word_table, input_pos_table, ids, mask, B, T, e->n_layers, out);
}

/* The embeddings and the first n_run layers.  out->layers[l] keeps each layer's output when the caller
 * reads them (layers_read); else, in a no-grad scope, each layer's intermediate tensors go back to the
 * arena as soon as the layer has run (tape_keep_only): the forward then holds about one layer's
 * activations instead of all of them (predict at 32 × 128, tiny: peak RSS 261 → 160 MB), and the embeddings'
 * intermediates go back the same way (138 → 128 MB); each layer writes its output over its input
 * (layer_forward_over), so no layer's output is copied. */
static Tensor *forward_first(Tape *t, const Encoder *e, Tensor *word_table, Tensor *input_pos_table, const int32_t *ids,
                             const int32_t *mask, int B, int T, int n_run, EncoderOut *out, int layers_read) {
    const ModelConfig *c = &e->cfg;
    if (n_run > e->n_layers || (n_run < 1 && e->n_layers > 0))
        fatal("encoder %s: %d of its %d layers asked for", e->prefix, n_run, e->n_layers);
    const int give_back = !layers_read && t->nograd > 0;
    encoder_inputs(t, e, word_table, input_pos_table, ids, mask, B, T, out, give_back);
    Tensor *x = out->emb;
    uint32_t draws = 0; /* random ops of one layer (every layer has the same ops) */
    const size_t mark = give_back ? tape_mark(t) : 0; /* each layer's output replaces its input here */
    for (int l = 0; l < n_run; l++) {
        const uint32_t n0 = t->n_random;
        x = give_back ? layer_forward_over(t, c, &e->layers[l], x, &out->rel) : layer_forward(t, c, &e->layers[l], x, x, &out->rel);
        if (give_back) x = tape_keep_only(t, mark, x);
        if (l == 0) draws = t->n_random - n0;
        out->layers[l] = layers_read ? x : NULL;
    }
    t->n_random += draws * (uint32_t)(e->n_layers - n_run);
    return x;
}

Tensor *encoder_forward_first(Tape *t, const Encoder *e, Tensor *word_table, Tensor *input_pos_table, const int32_t *ids,
                              const int32_t *mask, int B, int T, int n_run, EncoderOut *out) {
    EncoderOut local;
    return forward_first(t, e, word_table, input_pos_table, ids, mask, B, T, n_run, out ? out : &local, out != NULL);
}

Tensor *encoder_forward_cls(Tape *t, const Encoder *e, const int32_t *ids, const int32_t *mask, int B, int T) {
    const int L = e->n_layers, H = e->cfg.hidden_size;
    if (L < 1) fatal("encoder %s: no layer to run", e->prefix);
    EncoderOut out;
    Tensor *x;
    if (L > 1) x = forward_first(t, e, NULL, NULL, ids, mask, B, T, L - 1, &out, 0);
    else encoder_inputs(t, e, NULL, NULL, ids, mask, B, T, &out, t->nograd > 0), x = out.emb;
    /* the last layer's queries: position 0 of each sequence ([B, 1, H]), with their own mask; c's first
     * row holds c(0, j) */
    int32_t *first = arena_alloc(&t->arena, (size_t)B * sizeof(int32_t)), *qmask = arena_alloc(&t->arena, (size_t)B * sizeof(int32_t));
    for (int b = 0; b < B; b++) first[b] = b * T, qmask[b] = out.rel.mask[(long)b * T];
    const int s2[2] = {B * T, H}, s3[3] = {B, 1, H};
    Tensor *q0 = op_reshape(t, op_index_select(t, op_reshape(t, x, 2, s2), first, B), 3, s3);
    RelContext rc = out.rel;
    rc.qmask = qmask;
    return layer_forward(t, &e->cfg, &e->layers[L - 1], q0, x, &rc);
}

Tensor *encoder_positions(Tape *t, const Encoder *e, Tensor *pos_table, const int32_t *pos_ids, int B, int T) {
    Tensor *table = pos_table ? pos_table : e->position;
    if (!table) fatal("encoder %s: no absolute position table (registered with ENC_NO_POSITION)", e->prefix);
    int32_t *ids = arena_alloc(&t->arena, (size_t)B * T * sizeof(int32_t));
    for (long i = 0; i < (long)B * T; i++) ids[i] = pos_ids ? pos_ids[i] : (int32_t)(i % T);
    const int s3[3] = {B, T, e->cfg.hidden_size};
    return op_reshape(t, op_embedding(t, table, ids, B * T, -1), 3, s3);
}
