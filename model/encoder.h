/* encoder.h — DeBERTa-V3 backbone: embeddings (spec §2.1), post-LN layers (§2.2), encoder (§2.3).
 *
 *   x0   = Dropout_h( LN_emb(W_word[ids]) ⊙ m )          no absolute positions at the input (V3)
 *   R̂    = LN_rel(W_rel[reachable rows]),  c(i,j)       once per forward, shared by every layer
 *   x_n  = layer_n(query = x_{n−1}, kv = x_{n−1})        n = 0 .. L−1, all outputs kept
 *   layer(qin, kv):  a = attention block (model/attention.h),  y = LN_out(Dropout_h(W2·GELU(W1·a + b1) + b2) + a)
 *
 * Parameters are registered in a ParamSet under their Hugging Face DebertaV2 names (spec §7.1)
 * after a caller-given prefix: "deberta." for a bare encoder, "generator.deberta." /
 * "discriminator.deberta." in the ELECTRA pair:
 *   <p>embeddings.word_embeddings.weight [V,H]      (unless ENC_NO_WORD: GDES/ES supply the table)
 *   <p>embeddings.position_embeddings.weight [P,H]  (unless ENC_NO_POSITION; used only by the EMD)
 *   <p>embeddings.LayerNorm.{weight,bias}
 *   <p>encoder.layer.{n}.attention.self.{query,key,value}_proj.{weight,bias}
 *   <p>encoder.layer.{n}.attention.output.dense.{weight,bias}, ….attention.output.LayerNorm.{weight,bias}
 *   <p>encoder.layer.{n}.intermediate.dense.{weight,bias}, ….output.dense.{weight,bias}, ….output.LayerNorm.{…}
 *   <p>encoder.rel_embeddings.weight [2S,H], <p>encoder.LayerNorm.{weight,bias} (the rel-table LN)
 */
#ifndef DEBERTA_MODEL_ENCODER_H
#define DEBERTA_MODEL_ENCODER_H
#include <stdint.h>
#include "model/attention.h"

typedef struct LayerParams {
    AttentionParams att;   /* <layer>.attention.* */
    Tensor *w1, *b1;       /* intermediate.dense [I, H], [I] */
    Tensor *w2, *b2;       /* output.dense       [H, I], [H] */
    Tensor *ln_g, *ln_b;   /* output.LayerNorm   [H] */
} LayerParams;

enum { ENC_NO_WORD = 1, ENC_NO_POSITION = 2 };

typedef struct Encoder {
    ModelConfig cfg;       /* copy (validated) */
    int n_layers;
    char prefix[64];
    Tensor *word;          /* [V, H] or NULL (ENC_NO_WORD) */
    Tensor *position;      /* [max_position_embeddings, H] or NULL (ENC_NO_POSITION) */
    Tensor *emb_ln_g, *emb_ln_b;
    LayerParams *layers;   /* n_layers */
    Tensor *rel;           /* [2S, H] rel_embeddings */
    Tensor *rel_ln_g, *rel_ln_b;
} Encoder;

/* Everything one forward produced that the heads and the EMD need (arena memory). */
typedef struct EncoderOut {
    Tensor *emb;           /* [B, T, H] embedding output x0 */
    Tensor **layers;       /* n_layers outputs [B, T, H]; layers[n_layers − 1] is the last hidden state */
    RelContext rel;        /* mask, c(i,j), LN'd reachable rel rows: reuse for extra layer calls */
} EncoderOut;

/* Registers the parameters (ps must not be finalized yet).  cfg must be validated. */
void encoder_register(Encoder *e, ParamSet *ps, const ModelConfig *cfg, int n_layers, const char *prefix, int flags);
void encoder_free(Encoder *e);

/* The layer a parameter name belongs to under prefix ("deberta.encoder.layer.3.output.dense.weight"
 * under "deberta." is layer 3), as encoder_register names them; -1 for a name outside the layers. */
int encoder_param_layer(const char *name, const char *prefix);

/* Forward.  word_table: the [V, H] word-embedding Tensor to look up (e.g. detach(E_G) + E_Δ for GDES,
 * the generator's own table for ES), or NULL for e->word.  ids, mask: [B·T] int32 (mask 0/1, NULL =
 * no padding).  Padding id rows get no lookup gradient (cfg.pad_id).  Returns the last hidden state;
 * fills out (may be NULL).  With out NULL in a no-grad scope each layer's intermediate tensors go back to
 * the arena once the layer has run (tape_keep_only), so the forward holds about one layer's activations. */
Tensor *encoder_forward(Tape *t, const Encoder *e, Tensor *word_table, const int32_t *ids, const int32_t *mask, int B, int T,
                        EncoderOut *out);

/* The same with absolute positions added to the input embeddings (x0 = LN(W[ids] + P[0..T−1])…,
 * HF's position_biased_input) when input_pos_table [max_position_embeddings, H] is not NULL. */
Tensor *encoder_forward_pos(Tape *t, const Encoder *e, Tensor *word_table, Tensor *input_pos_table, const int32_t *ids,
                            const int32_t *mask, int B, int T, EncoderOut *out);

/* encoder_forward_pos through the first n_run layers only (1 <= n_run <= n_layers): out->layers[l]
 * is NULL for l >= n_run, and the random draws of the layers not run are skipped over (t->n_random
 * advanced by what layer 0 drew, per layer), so every later dropout mask is the full forward's.
 * Returns out->layers[n_run − 1]. */
Tensor *encoder_forward_first(Tape *t, const Encoder *e, Tensor *word_table, Tensor *input_pos_table, const int32_t *ids,
                              const int32_t *mask, int B, int T, int n_run, EncoderOut *out);

/* The last layer's output at position 0 ([CLS]) alone, [B, 1, H]: what a head that reads only [CLS] needs
 * (deberta predict and evaluation of sequence tasks; nothing else). Every layer but the last runs on all
 * positions; the last computes its keys and values on all positions and its query, attention, output and
 * FFN for position 0 only. The values are encoder_forward's row 0 up to the products' summation order
 * (tests/test_model_encoder.c). */
Tensor *encoder_forward_cls(Tape *t, const Encoder *e, const int32_t *ids, const int32_t *mask, int B, int T);

/* One post-LN layer: qin, kv [B, T, H] -> [B, T, H] (the EMD calls it with qin != kv).  In a no-grad scope the
 * attention block's intermediate tensors go back to the arena before the feed-forward runs (tape_keep_only). */
Tensor *layer_forward(Tape *t, const ModelConfig *cfg, const LayerParams *p, Tensor *qin, Tensor *kv, const RelContext *rc);

/* Raw absolute position rows W_pos[pos_ids] [B, T, H] (no LN, no dropout; spec §3): pos_table or
 * NULL for e->position; pos_ids [B·T] int32 or NULL for 0..T−1 in every row. */
Tensor *encoder_positions(Tape *t, const Encoder *e, Tensor *pos_table, const int32_t *pos_ids, int B, int T);
#endif
