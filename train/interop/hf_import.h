/* hf_import.h — the import tensor map: Hugging Face DebertaV2 folders (config.json +
 * model.safetensors, F32/F16/BF16/F64) into an Electra pair (`deberta import`; layout docs/FORMATS.md
 * "Import").
 *
 * The discriminator folder holds deberta.* and, when present, mask_predictions.* (the RTD head;
 * initialised when absent).  The generator folder holds deberta.* + lm_predictions.lm_head.* or
 * cls.predictions.*; without one, the generator (of the config's depth) is initialised, with its word
 * and position tables copied from the discriminator and its MLM head taken from the discriminator's
 * folder when that has one.  A folder written by DebertaV2Model.save_pretrained names the encoder
 * without the "deberta." prefix (embeddings.*, encoder.*) and has no head: it is read the same way,
 * the heads initialised as for any folder without them.  Under GDES E_Δ = E_D − E_G.
 */
#ifndef DEBERTA_INTEROP_HF_IMPORT_H
#define DEBERTA_INTEROP_HF_IMPORT_H
#include <stddef.h>
#include "model/electra.h"
#include "train/interop/safetensors.h"

typedef struct HfFolder {
    const char *dir;
    StFile *st;
    unsigned char *used; /* per tensor of st: read into the model */
    int bare;            /* encoder names without "deberta." (DebertaV2Model.save_pretrained) */
} HfFolder;

/* Opens dir/model.safetensors (with the pickle-only folder named as such) and, when c is not NULL,
 * applies dir/config.json to it.  0, or -1 with "import: ..." in err. */
int hf_folder_open(HfFolder *f, const char *dir, ModelConfig *c, char *err, size_t errlen);
void hf_folder_close(HfFolder *f);
/* A warning line naming up to four tensors of f that the import did not use (tied decoders aside). */
void hf_folder_warn_unused(const HfFolder *f);

/* Before anything is allocated: config c (validated) against the tensors of f that set the model's
 * sizes, for an encoder of n_layers layers: the word table [vocab_size, hidden_size], the layers the
 * file holds (at least n_layers), layer 0's query_proj [heads x head size, hidden_size] and
 * intermediate.dense [intermediate_size, hidden_size], and, when present, the position table
 * [max_position_embeddings, hidden_size] and rel_embeddings [2 x buckets, hidden_size].  0, or -1
 * with one line naming the key, its value and the tensor's shape. */
int hf_folder_check(const HfFolder *f, const ModelConfig *c, int n_layers, char *err, size_t errlen);

typedef struct HfImported {
    int n_init;          /* parameters (or head groups) initialised, not read */
    char init_list[400]; /* the first three, comma-separated */
} HfImported;

/* Reads every parameter of m (electra_build of the config the folders gave) from d and g (NULL:
 * none).  0, or -1 with "import: ..." in err (a missing tensor, a shape the config does not imply,
 * a non-float dtype, NaN/Inf, two MLM head names that differ). */
int hf_import_electra(Electra *m, HfFolder *d, HfFolder *g, HfImported *r, char *err, size_t errlen);
#endif
