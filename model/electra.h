/* electra.h — the DeBERTa-V3 ELECTRA pair: generator (encoder + Enhanced Mask Decoder + MLM head)
 * and discriminator (encoder + RTD head), with GDES / ES / NES embedding sharing (spec §3–§5).
 *
 * Generator (spec §3):
 *   hs     = output of layer L_G−2 (the last layer's input; the embedding output if L_G = 1)
 *   q      = W_pos[0..T−1] + hs                        raw absolute positions, no LN, no dropout
 *   q      = layer_{L_G−1}(query = q, kv = hs)  twice, same weights              (use_emd)
 *   h      = q[masked rows]                             row-major order of labels > 0
 *   logits = LN_lm(GELU(h·Wd^T + bd)) · E_G^T + b_vocab      [N_masked, V]
 *   loss_G = mean CE(logits, labels[masked])
 *   Without EMD (use_emd = 0) the head reads the last layer's output.
 * Discriminator (spec §4.4):
 *   hL     = encoder(replaced_ids);  s = LN_rtd(hL + hL[:, 0]);  s = GELU(s·Wr^T + br)
 *   logit  = s·wc^T + bc  [B, T];  y = labels > 0 AND replaced != labels
 *   loss_D = λ · mean over tokens with attention_mask = 1 of BCE-with-logits(logit, y)
 * Embedding sharing (spec §5): the discriminator's word table is
 *   GDES  stopgrad(E_G) + E_Δ   (E_Δ = discriminator.deberta.embeddings.word_embeddings._weight, zero-init)
 *   ES    E_G itself            (both losses reach it; needs joint training)
 *   NES   its own E_D
 * Parameter names are the Hugging Face / official ones with "generator." / "discriminator." prefixes.
 */
#ifndef DEBERTA_MODEL_ELECTRA_H
#define DEBERTA_MODEL_ELECTRA_H
#include <stdint.h>
#include "model/encoder.h"

/* What the pair reads of one batch of masked sequences: plain row-major arrays of B·T ids (the
 * model knows no loader; train/ fills this from the loader's batches). */
typedef struct ElectraInput {
    int B, T;                       /* batch size, sequence length */
    const int32_t *input_ids;       /* [B·T] after masking ([MASK] or replacement at masked positions), 0-padded */
    const int32_t *attention_mask;  /* [B·T] 1 = real token, 0 = padding */
    const int32_t *labels;          /* [B·T] original id at masked positions, 0 elsewhere (labels > 0 <=> masked) */
    /* A data-parallel rank holds a slice of a larger batch: these place it there (0 for a whole batch).
     * Dropout of batch-shaped activations is drawn as for global rows row0.. (op_dropout_batch), the
     * replacement of the k-th masked position as for masked position masked0 + k of the whole batch. */
    int64_t row0;                   /* global index of row 0 */
    int64_t masked0;                /* masked positions in the rows before row0 */
} ElectraInput;

typedef struct LMHead {   /* generator.lm_predictions.lm_head.* */
    Tensor *dense_w, *dense_b, *ln_g, *ln_b, *bias;
} LMHead;

typedef struct RTDHead {  /* discriminator.mask_predictions.* */
    Tensor *dense_w, *dense_b, *ln_g, *ln_b, *cls_w, *cls_b;
} RTDHead;

typedef struct Electra {
    ModelConfig cfg;          /* validated */
    ParamSet ps;              /* every parameter of both models, one flat buffer */
    Encoder gen, disc;
    LMHead lm;
    RTDHead rtd;
    Tensor *word_delta;       /* GDES E_Δ [V, H], else NULL */
    Tensor *pos_delta;        /* GDES P_Δ [P, H] (never used by a V3 discriminator), else NULL */
    int n_gen_params;         /* ps.params[0 .. n_gen_params) are the generator's, the rest the discriminator's */
    int gen_all_layers;       /* 1: the generator computes its last layer's own output even with EMD (dumps);
                               * 0 (default): skipped, the EMD and the loss never read it (spec §3) */
} Electra;

/* Registers, allocates and initialises (spec §4.8, seed) every parameter.  cfg must be validated. */
void electra_build(Electra *m, const ModelConfig *cfg, uint64_t seed);
/* The elements the flat parameter buffer of electra_build would hold (padding included), counted
 * without allocating it: for the memory estimate made before anything is built. */
double electra_param_slots(const ModelConfig *cfg);
void electra_free(Electra *m);

typedef struct GenOut {
    EncoderOut enc;
    Tensor *emd[2];           /* the two EMD passes [B, T, H] (NULL without EMD) */
    Tensor *logits;           /* [N_masked, V] */
    Tensor *loss;             /* scalar MLM mean */
    int n_masked;
    int32_t *rows;            /* [N_masked] flat positions b·T + i of the masked tokens */
    int32_t *targets;         /* [N_masked] original ids */
} GenOut;

typedef struct DiscOut {
    EncoderOut enc;
    Tensor *logits;           /* [B, T] */
    Tensor *bce;              /* scalar: mean BCE over valid tokens */
    Tensor *loss;             /* scalar: rtd_lambda · bce */
    int32_t *y;               /* [B·T] RTD labels */
} DiscOut;

/* Generator forward on a masked batch (b->input_ids holds [MASK] at masked positions).
 * Fails clearly if the batch has no masked token. Returns out->loss. */
Tensor *generator_forward(Tape *t, const Electra *m, const ElectraInput *b, GenOut *out);

/* Draws one replacement per masked position from softmax(logits) (temperature 1, nothing
 * excluded), with rng_uniform(seed, rng_stream(RNG_SAMPLE, step, 0), b->masked0 + masked index) and an inverse
 * CDF in double.  replaced [B·T] = input ids with the draws at masked positions and the original
 * (label) ids elsewhere left as in b->input_ids. */
void electra_sample(const GenOut *g, const ElectraInput *b, uint64_t seed, uint64_t step, int32_t *replaced);

/* Masked positions whose argmax logit is the original token. */
long mlm_correct(const GenOut *g);
/* Real tokens (attention_mask[i] != 0, i < n) whose RTD decision (logit > 0 = replaced) matches the label. */
long rtd_correct(const DiscOut *d, const int32_t *attention_mask, long n);

/* Discriminator forward on replaced ids [B·T]. Returns out->loss (λ-scaled). */
Tensor *discriminator_forward(Tape *t, const Electra *m, const ElectraInput *b, const int32_t *replaced, DiscOut *out);

/* The generator's parameters are ps.params[0..n_gen_params); every name starts with "generator.". */
static inline int electra_is_generator_param(const Electra *m, int i) { return i < m->n_gen_params; }
#endif
