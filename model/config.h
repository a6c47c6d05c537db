/* config.h — the model configuration: every field of spec §6.1 plus what the ELECTRA pair needs.
 *
 * Keys are the Hugging Face config.json names where one exists (hidden_size, num_hidden_layers, …),
 * so a config file, a `--key value` flag, a run directory's config and a weights file's HDF5
 * attributes all use one vocabulary.  On the command line '-' and '_' are interchangeable
 * (--hidden-size 256 == --hidden_size 256).
 *
 * Life cycle: config_preset() (or config_defaults()), then config_set() per file line / flag, then
 * config_validate(), which resolves the derived fields (attention_head_size 0 → hidden/heads,
 * max_relative_positions < 1 → max_position_embeddings, gen_num_hidden_layers 0 → layers/2) and
 * rejects an inconsistent configuration with one clear message.
 */
#ifndef DEBERTA_MODEL_CONFIG_H
#define DEBERTA_MODEL_CONFIG_H
#include <stddef.h>
#include <stdio.h>

#include "autograd/ops_attention.h"  /* ATT_C2C | ATT_C2P | ATT_P2C: any non-empty subset (spec §1.6) */

enum { SHARE_GDES = 0, SHARE_ES, SHARE_NES };
enum { TRAIN_DECOUPLED = 0, TRAIN_JOINT };

typedef struct ModelConfig {
    /* encoder shape (spec §6.1) */
    int hidden_size;              /* H */
    int num_hidden_layers;        /* discriminator depth */
    int num_attention_heads;      /* A */
    int attention_head_size;      /* D; 0 = hidden_size / heads */
    int intermediate_size;        /* I (FFN) */
    int vocab_size;               /* V */
    int max_position_embeddings;  /* rows of the absolute position table (EMD) */
    int position_buckets;         /* PB; <= 0: no log buckets */
    int max_relative_positions;   /* MRP; < 1 means max_position_embeddings */
    int att_terms;                /* ATT_* bitmask, "pos_att_type" = "c2c|c2p|p2c" */
    int share_att_key;            /* only 1 is supported (V3) */
    int norm_rel_ebd;             /* 1: "layer_norm" (V3), 0: "none" */
    double layer_norm_eps;
    double hidden_dropout_prob;
    double attention_probs_dropout_prob;
    double initializer_range;
    /* ELECTRA pair (spec §4, §5, §11) */
    int gen_num_hidden_layers;    /* 0 = half the discriminator's (min 1) */
    int use_emd;                  /* generator uses the Enhanced Mask Decoder */
    int embedding_sharing;        /* SHARE_* */
    double rtd_lambda;
    int training_mode;            /* TRAIN_* */
    int disc_position_biased_input; /* 1: absolute positions added at the discriminator's input, as
                                     * ELECTRA/BERT do (an ablation control; V3 has none) */
    /* special token ids (data/tokenizer.h) and sequence length */
    int pad_id, cls_id, sep_id, unk_id, mask_id;
    int max_seq_len;
} ModelConfig;

/* The defaults: the tiny preset. */
void config_defaults(ModelConfig *c);
/* Presets: "tiny", "xsmall" (published xsmall shape, vocab 8192), "test" (very small, for
 * gradient checks and parity; the reference's `test` preset).  Returns 0, or -1 (unknown name). */
int config_preset(ModelConfig *c, const char *name);
/* Sets one field from text.  Key "preset" applies a whole preset.  Returns 0, or -1 with a message
 * in err ("unknown key", "not an integer", …). */
int config_set(ModelConfig *c, const char *key, const char *value, char *err, size_t errlen);
/* Reads `key = value` lines ('#' starts a comment, blank lines ignored).  Returns 0 or -1 with
 * "<path>:<line>: <what>" in err. */
int config_load(ModelConfig *c, const char *path, char *err, size_t errlen);
/* Applies `key = value` text held in memory (a checkpoint's /config, a run's config.txt).  Keys
 * this struct does not know (e.g. the training options a checkpoint stores next to the model
 * config) and "preset" are skipped; a bad value of a known key fails with "<what>: config: ...". */
int config_from_text(ModelConfig *c, const char *text, const char *what, char *err, size_t errlen);
/* The line splitting of config_from_text, for any `key = value` text: calls fn(key, value, ctx) for
 * every line of text (NULL = "") that is not blank once a '#' comment is cut off, with the key and
 * value trimmed of spaces; value is NULL on a line without '='.  Stops at the first nonzero return of
 * fn and returns it (fn should return > 0); 0 when every line was visited; -1 when out of memory. */
int config_text_each(const char *text, int (*fn)(const char *key, const char *value, void *ctx), void *ctx);
/* Consumes `--key value` pairs that name config keys from argv[*i] (advancing *i past the value).
 * Returns 1 if argv[*i] was a config flag, 0 if not (caller handles it), -1 on a bad value (err). */
int config_parse_flag(ModelConfig *c, int argc, char **argv, int *i, char *err, size_t errlen);
/* Resolves derived fields and checks consistency.  Returns 0 or -1 with one message in err. */
int config_validate(ModelConfig *c, char *err, size_t errlen);

/* Writes the (validated) config as `key = value` lines, loadable by config_load. */
void config_write(const ModelConfig *c, FILE *f);
int config_save(const ModelConfig *c, const char *path, char *err, size_t errlen);
/* The config as `key = value` text (heap string). */
char *config_to_text(const ModelConfig *c);

/* Derived sizes (valid after config_validate). */
int config_att_span(const ModelConfig *c);      /* S = PB if PB > 0 else MRP */
int config_rel_rows(const ModelConfig *c);      /* R = 2S rows of rel_embeddings */
int config_num_terms(const ModelConfig *c);     /* number of attention terms on */
/* "c2c|c2p|p2c" for a bitmask (static buffer per mask value). */
const char *config_terms_str(int terms);
/* Parses "c2c|p2c" (also ',' or '+' separated, order free) into a bitmask; -1 on unknown/empty. */
int config_parse_terms(const char *s);
const char *config_sharing_str(int sharing);
const char *config_mode_str(int mode);
#endif
