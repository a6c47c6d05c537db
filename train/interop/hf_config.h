/* hf_config.h — a Hugging Face DebertaV2 config.json: read into a ModelConfig (`deberta import`),
 * written from one (`deberta export`).  Parsed with libjansson (docs/ARCHITECTURE.md, "Dependencies
 * outside the C library"): full JSON, \u escapes and strings of any length.
 *
 * Read: vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size,
 * max_position_embeddings, attention_head_size (optional), position_buckets (-1/absent: none),
 * max_relative_positions (-1/absent: max_position_embeddings), layer_norm_eps, pos_att_type (a list
 * or a "p2c|c2p" string; c2c is always on), norm_rel_ebd, hidden_dropout_prob,
 * attention_probs_dropout_prob, initializer_range, pad_token_id.  Refused (one message): another
 * model_type, relative_attention not true, position_biased_input true, share_att_key false,
 * hidden_act other than gelu, type_vocab_size or conv_kernel_size non-zero.  Other keys are ignored.
 */
#ifndef DEBERTA_INTEROP_HF_CONFIG_H
#define DEBERTA_INTEROP_HF_CONFIG_H
#include <stddef.h>
#include "model/config.h"

/* The bounds of config.json's sizes (an integer key above its bound is refused, naming it). */
#define HF_MAX_VOCAB (1 << 24)      /* vocab_size, pad_token_id */
#define HF_MAX_WIDTH (1 << 16)      /* hidden_size, num_attention_heads, attention_head_size; intermediate_size 4x */
#define HF_MAX_LAYERS 1024          /* num_hidden_layers */
#define HF_MAX_POSITIONS (1 << 14)  /* max_position_embeddings, position_buckets, max_relative_positions */

/* Applies path's keys to c (which holds the defaults).  0, or -1 with "config PATH: what" in err. */
int hf_config_read(const char *path, ModelConfig *c, char *err, size_t errlen);

/* Writes config.json (spec §7.2) for one model of depth n_layers: architectures [arch], extra (may
 * be NULL: lines of further keys, each ending ",\n") before "legacy".  0, or -1 with a message. */
int hf_config_write(const char *path, const ModelConfig *c, int n_layers, const char *arch, const char *extra, int legacy, char *err,
                    size_t errlen);
/* The extra keys of a classification model: num_labels, id2label, label2id, after problem_type
 * "regression" when regression (Hugging Face's num_labels 1 with the MSE loss); malloc'd. */
char *hf_config_labels(const char *const *names, int n_labels, int regression);
#endif
