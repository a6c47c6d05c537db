/* gradcheck_model.c — see gradcheck_model.h */
#include "model/gradcheck_model.h"
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "model/encoder.h"
#include "model/init.h"
#include "model/task_head.h"

enum { GB = 2, GT = 5 };
/* batch 0: last position padded; batch 1: three padded positions */
static const int32_t MASK[GB * GT] = {1, 1, 1, 1, 0, 1, 1, 0, 0, 0};
static const int32_t IDS[GB * GT] = {1, 7, 11, 2, 0, 1, 5, 0, 0, 0};

static void small_config(ModelConfig *c, int terms) {
    char err[256];
    config_preset(c, "test");
    c->hidden_size = 8;
    c->num_attention_heads = 2;
    c->attention_head_size = 4;
    c->intermediate_size = 16;
    c->vocab_size = 12;
    c->max_position_embeddings = 16;
    c->position_buckets = 4;
    c->max_relative_positions = 8;
    c->max_seq_len = 16;
    c->num_hidden_layers = 2;
    c->gen_num_hidden_layers = 1;
    c->att_terms = terms;
    c->hidden_dropout_prob = 0;
    c->attention_probs_dropout_prob = 0;
    if (config_validate(c, err, sizeof err)) fatal("gradcheck config: %s", err);
}

/* checks: spot elements of every leaf + 3 random directions; the worse of the two.  The float build
 * is a smoke test only (step 1e-2 through several LayerNorms): fewer elements, tolerance
 * GC_MODEL_FLOAT_TOL; the double build uses the op tolerance (1e-7). */
static GCResult check(Tape *t, GraphFn f, Tensor **leaves, int n, void *ctx) {
    GCResult a = gradcheck_elements(t, f, leaves, n, ctx, REAL_IS_DOUBLE ? GC_MODEL_ELEMS : 3);
    GCResult b = gradcheck_direction(t, f, leaves, n, ctx, 3, 77);
    GCResult r = a;
    r.n_checked = a.n_checked + b.n_checked;
    if (b.max_err > r.max_err) r.max_err = b.max_err;
    if (b.max_abs > r.max_abs) r.max_abs = b.max_abs;
    r.ok = r.max_err <= (REAL_IS_DOUBLE ? gradcheck_tolerance() : GC_MODEL_FLOAT_TOL);
    return r;
}

/* ---- one layer, query != key/value ---- */
typedef struct {
    ModelConfig cfg;
    Encoder enc;
    const int32_t *mask;
} LayerCtx;

/* leaves: [0] qin, [1] kv, then the parameters of the ParamSet */
static Tensor *g_layer(Tape *t, Tensor **x, int n, void *vctx) {
    LayerCtx *c = vctx;
    RelContext rc;
    relctx_build(t, &rc, &c->cfg, c->enc.rel, c->enc.rel_ln_g, c->enc.rel_ln_b, c->mask, GB, GT);
    return layer_forward(t, &c->cfg, &c->enc.layers[0], x[0], x[1], &rc);
}

static GCResult run_layer(Tape *t, int terms, const int32_t *mask) {
    LayerCtx c;
    small_config(&c.cfg, terms);
    c.mask = mask;
    ParamSet ps;
    params_init(&ps);
    encoder_register(&c.enc, &ps, &c.cfg, 1, "deberta.", ENC_NO_WORD | ENC_NO_POSITION);
    params_finalize(&ps);
    model_init_params(&ps, 0.3, 11);
    model_perturb_params(&ps, 12);
    const int s3[3] = {GB, GT, c.cfg.hidden_size};
    Tensor **leaves = xcalloc(ps.n + 2, sizeof(Tensor *));
    leaves[0] = gradcheck_leaf(3, s3, 1, "qin");
    leaves[1] = gradcheck_leaf(3, s3, 1, "kv");
    gradcheck_fill_uniform(leaves[0], 301, -1, 1);
    gradcheck_fill_uniform(leaves[1], 302, -1, 1);
    for (int i = 0; i < ps.n; i++) leaves[2 + i] = ps.params[i];
    GCResult r = check(t, g_layer, leaves, ps.n + 2, &c);
    gradcheck_leaf_free(leaves[0]);
    gradcheck_leaf_free(leaves[1]);
    free(leaves);
    encoder_free(&c.enc);
    params_free(&ps);
    return r;
}

/* ---- 2-layer encoder ---- */
typedef struct {
    Encoder enc;
} EncCtx;

static Tensor *g_encoder(Tape *t, Tensor **x, int n, void *vctx) {
    EncCtx *c = vctx;
    return encoder_forward(t, &c->enc, NULL, IDS, MASK, GB, GT, NULL);
}

static GCResult run_encoder(Tape *t, int terms) {
    ModelConfig cfg;
    small_config(&cfg, terms);
    EncCtx c;
    ParamSet ps;
    params_init(&ps);
    encoder_register(&c.enc, &ps, &cfg, 2, "deberta.", 0);
    params_finalize(&ps);
    model_init_params(&ps, 0.3, 21);
    model_perturb_params(&ps, 22);
    GCResult r = check(t, g_encoder, ps.params, ps.n, &c);
    encoder_free(&c.enc);
    params_free(&ps);
    return r;
}

static const int32_t MASK_FULLPAD[GB * GT] = {1, 1, 1, 0, 1, 0, 0, 0, 0, 0};

#define SUBSET_CASES(NAME, TERMS)                                                 \
    static GCResult gradcheck_layer_##NAME(Tape *t) { return run_layer(t, TERMS, MASK); } \
    static GCResult gradcheck_encoder_##NAME(Tape *t) { return run_encoder(t, TERMS); }
SUBSET_CASES(c2c, ATT_C2C)
SUBSET_CASES(c2p, ATT_C2P)
SUBSET_CASES(p2c, ATT_P2C)
SUBSET_CASES(c2c_c2p, ATT_C2C | ATT_C2P)
SUBSET_CASES(c2c_p2c, ATT_C2C | ATT_P2C)
SUBSET_CASES(c2p_p2c, ATT_C2P | ATT_P2C)
SUBSET_CASES(all, ATT_ALL)
static GCResult gradcheck_layer_fullpad(Tape *t) { return run_layer(t, ATT_ALL, MASK_FULLPAD); }

/* ---- task heads: alone on a hidden-state leaf (dropout on, training mode), and on a 2-layer encoder ---- */
typedef struct {
    TaskHead head;
    Encoder enc;
    int use_enc, B, T;
    const int32_t *mask;       /* the leaf's padding (mean pooler), NULL: none */
    const int32_t *labels;
    const real *targets;       /* regression */
} HeadCtx;

static Tensor *head_loss(Tape *t, HeadCtx *c, Tensor *h) {
    TaskHeadOut o;
    const int32_t *mask = c->use_enc ? MASK : c->mask;
    if (c->head.kind == HEAD_REGRESSION) return task_head_mse(t, &c->head, h, c->B, c->T, mask, c->targets, &o);
    return task_head_forward(t, &c->head, h, c->B, c->T, mask, c->labels, &o);
}

static Tensor *g_head(Tape *t, Tensor **x, int n, void *vctx) {
    HeadCtx *c = vctx;
    if (c->use_enc) return head_loss(t, c, encoder_forward(t, &c->enc, NULL, IDS, MASK, GB, GT, NULL));
    int was = t->training;
    t->training = 1;
    Tensor *y = head_loss(t, c, x[0]);
    t->training = was;
    return y;
}

/* token labels: -100 on [CLS]-like position 0, on padding and on a second sub-token */
static const int32_t TOKEN_LABELS[GB * GT] = {-100, 2, -100, 0, -100, -100, 3, -100, -100, -100};
static const int32_t TOKEN_NONE[GB * GT] = {-100, -100, -100, -100, -100, -100, -100, -100, -100, -100};
static const int32_t SEQ_LABELS[3] = {1, 3, 1};
static const real REG_TARGETS[3] = {0.75, -1.5, 2.25};

/* the mean pooler's padding over the [3, 5] leaf: rows of 5, 3 and 1 tokens */
static const int32_t LEAF_MASK[3 * GT] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0};

static GCResult run_head(Tape *t, HeadKind kind, HeadPooler pooler, int use_enc, const int32_t *labels) {
    ModelConfig cfg;
    small_config(&cfg, ATT_ALL);
    HeadCtx c;
    memset(&c, 0, sizeof c);
    c.use_enc = use_enc;
    c.labels = labels;
    c.targets = REG_TARGETS;
    c.B = use_enc ? GB : (kind != HEAD_TOKEN ? 3 : GB);
    c.T = GT;
    ParamSet ps;
    params_init(&ps);
    if (use_enc) encoder_register(&c.enc, &ps, &cfg, 2, "deberta.", 0);
    real p = use_enc ? 0 : (real)0.2;
    task_head_register(&c.head, &ps, kind, cfg.hidden_size, kind == HEAD_REGRESSION ? 1 : 4, p, p, "");
    c.head.pooler = pooler;
    c.mask = pooler == POOL_MEAN ? LEAF_MASK : NULL;
    params_finalize(&ps);
    model_init_params(&ps, 0.3, 31);
    model_perturb_params(&ps, 32);
    const int s3[3] = {c.B, c.T, cfg.hidden_size};
    Tensor **leaves = xcalloc(ps.n + 1, sizeof(Tensor *));
    int nl = 0;
    if (!use_enc) {
        leaves[nl] = gradcheck_leaf(3, s3, 1, "hidden");
        gradcheck_fill_uniform(leaves[nl++], 311, -1, 1);
    }
    for (int i = 0; i < ps.n; i++) leaves[nl++] = ps.params[i];
    GCResult r = check(t, g_head, leaves, nl, &c);
    if (!use_enc) gradcheck_leaf_free(leaves[0]);
    free(leaves);
    if (use_enc) encoder_free(&c.enc);
    params_free(&ps);
    return r;
}
static GCResult gradcheck_token_head(Tape *t) { return run_head(t, HEAD_TOKEN, POOL_CLS, 0, TOKEN_LABELS); }
static GCResult gradcheck_token_head_none(Tape *t) { return run_head(t, HEAD_TOKEN, POOL_CLS, 0, TOKEN_NONE); }
static GCResult gradcheck_token_head_enc(Tape *t) { return run_head(t, HEAD_TOKEN, POOL_CLS, 1, TOKEN_LABELS); }
static GCResult gradcheck_seq_head(Tape *t) { return run_head(t, HEAD_SEQUENCE, POOL_CLS, 0, SEQ_LABELS); }
static GCResult gradcheck_seq_head_enc(Tape *t) { return run_head(t, HEAD_SEQUENCE, POOL_CLS, 1, SEQ_LABELS); }
static GCResult gradcheck_seq_head_mean(Tape *t) { return run_head(t, HEAD_SEQUENCE, POOL_MEAN, 0, SEQ_LABELS); }
static GCResult gradcheck_seq_head_mean_enc(Tape *t) { return run_head(t, HEAD_SEQUENCE, POOL_MEAN, 1, SEQ_LABELS); }
static GCResult gradcheck_reg_head(Tape *t) { return run_head(t, HEAD_REGRESSION, POOL_CLS, 0, NULL); }
static GCResult gradcheck_reg_head_enc(Tape *t) { return run_head(t, HEAD_REGRESSION, POOL_CLS, 1, NULL); }
static GCResult gradcheck_reg_head_mean(Tape *t) { return run_head(t, HEAD_REGRESSION, POOL_MEAN, 0, NULL); }

const GCCase gradcheck_model_cases[] = {
    {"layer", "c2c, q != kv, padded", gradcheck_layer_c2c},
    {"layer", "c2p, q != kv, padded", gradcheck_layer_c2p},
    {"layer", "p2c, q != kv, padded", gradcheck_layer_p2c},
    {"layer", "c2c|c2p, q != kv, padded", gradcheck_layer_c2c_c2p},
    {"layer", "c2c|p2c, q != kv, padded", gradcheck_layer_c2c_p2c},
    {"layer", "c2p|p2c, q != kv, padded", gradcheck_layer_c2p_p2c},
    {"layer", "c2c|c2p|p2c, q != kv, padded", gradcheck_layer_all},
    {"layer", "all, one fully padded sequence", gradcheck_layer_fullpad},
    {"encoder2", "c2c, padded", gradcheck_encoder_c2c},
    {"encoder2", "c2p, padded", gradcheck_encoder_c2p},
    {"encoder2", "p2c, padded", gradcheck_encoder_p2c},
    {"encoder2", "c2c|c2p, padded", gradcheck_encoder_c2c_c2p},
    {"encoder2", "c2c|p2c, padded", gradcheck_encoder_c2c_p2c},
    {"encoder2", "c2p|p2c, padded", gradcheck_encoder_c2p_p2c},
    {"encoder2", "c2c|c2p|p2c, padded", gradcheck_encoder_all},
    {"token_head", "[2,5,8] L4, -100s, dropout 0.2", gradcheck_token_head},
    {"token_head", "[2,5,8] L4, every label -100", gradcheck_token_head_none},
    {"token_head", "2-layer encoder + head, padded", gradcheck_token_head_enc},
    {"seq_head", "[3,5,8] L4, dropout 0.2", gradcheck_seq_head},
    {"seq_head", "2-layer encoder + pooler + head", gradcheck_seq_head_enc},
    {"seq_head", "[3,5,8] mean pooler over rows of 5, 3, 1 tokens, dropout 0.2", gradcheck_seq_head_mean},
    {"seq_head", "2-layer encoder + mean pooler (padding) + head", gradcheck_seq_head_mean_enc},
    {"reg_head", "[3,5,8] one output, MSE, dropout 0.2", gradcheck_reg_head},
    {"reg_head", "2-layer encoder + pooler + one output, MSE", gradcheck_reg_head_enc},
    {"reg_head", "[3,5,8] mean pooler, one output, MSE, dropout 0.2", gradcheck_reg_head_mean},
};
const int gradcheck_n_model_cases = (int)ARRAY_LEN(gradcheck_model_cases);
