/* hf_export.h — the export tensor map: a model as Hugging Face DebertaV2 folders (config.json +
 * model.safetensors, F32); `deberta export`, layout docs/FORMATS.md "Export".
 *
 * Names: our parameters are the HF ones with a "generator." / "discriminator." prefix; the prefix is
 * dropped.  The generator's MLM head is written as the transformers class will look for it:
 * cls.predictions.{transform.dense, transform.LayerNorm, bias} (config legacy=true: what
 * DebertaV2ForMaskedLM of every transformers version reads), lm_predictions.lm_head.* (legacy=false:
 * the official layout), or both; the decoder weight is tied to the word embeddings and omitted.  The
 * RTD head (mask_predictions.*, which no transformers class has) only when asked.  The
 * discriminator's word and position tables are written as plain `.weight`: E_G + E_Δ and P_G + P_Δ
 * under GDES (spec §5.1; the deltas themselves are not written), the generator's tables under ES, its
 * own under NES.  A fine-tuned model is one folder of DebertaV2For{Token,Sequence}Classification with
 * its parameter names as they are and id2label/label2id in config.json.
 */
#ifndef DEBERTA_INTEROP_HF_EXPORT_H
#define DEBERTA_INTEROP_HF_EXPORT_H
#include <stddef.h>
#include "model/electra.h"
#include "model/task_head.h"

typedef struct HfExportHeads {
    int mlm_cls, mlm_official; /* the MLM head's names (at least one) */
    int rtd;                   /* mask_predictions.* */
} HfExportHeads;

/* gdir and ddir exist.  *n_gen, *n_disc get the tensor counts.  0, or -1 with "export: ..." in err. */
int hf_export_electra(const Electra *m, HfExportHeads heads, const char *gdir, const char *ddir, int *n_gen, int *n_disc, char *err,
                      size_t errlen);
/* The parameters of a fine-tuned model (encoder "deberta.*" + its head) into dir (existing).
 * *n gets the tensor count.  0, or -1 with a message in err. */
int hf_export_classifier(const ParamSet *ps, const ModelConfig *cfg, HeadKind kind, const char *const *labels, int n_labels,
                         const char *dir, int *n, char *err, size_t errlen);
#endif
