/* dump.h — for one explicit batch, every intermediate, both losses and every parameter gradient of the
 * generator/discriminator pair into a plain HDF5 file (`deberta dump`; names and gradient semantics
 * in docs/FORMATS.md "Parity and dump files"): the tool for gradient-correctness experiments against
 * any other implementation (scripts/reference/).
 *
 * Gradients: decoupled — generator.* from the MLM loss only (one backward), discriminator.* from
 * λ·RTD only (a second backward on its own tape; any RTD gradient it adds to generator tensors, as
 * under ES, is discarded); joint — both backwards accumulate: the gradient of MLM + λ·RTD. */
#ifndef DEBERTA_TRAIN_DUMP_H
#define DEBERTA_TRAIN_DUMP_H
#include <stddef.h>
#include "data/batch.h"
#include "model/electra.h"

/* `deberta dump`'s files; its --KEY VALUE config flags are the model config's (model/config.h). */
typedef struct DumpOptions {
    char weights[4096];   /* a parity weights file or a training checkpoint (required) */
    char batch[4096];     /* the batch file (required) */
    char out[4096];       /* the output file (required) */
    char config[4096];    /* "" or a config file applied over the weights' config */
} DumpOptions;

void dump_options_default(DumpOptions *o);
/* One `--flag value` of the option table (flag without "--"): 1 if it was one, 0 if the table has no
 * such flag (a config key, or unknown), -1 with a message ("--out needs a value"). */
int dump_options_set_flag(DumpOptions *o, const char *flag, const char *value, char *err, size_t errlen);

typedef struct DumpResult {
    double mlm_loss, rtd_loss;
    int n_masked;
} DumpResult;

/* Runs m (built, dropout 0; its gradients are overwritten, and every generator layer's output is
 * kept: m->gen_all_layers = 1) on b with the discriminator reading replaced [B*T], the gradients
 * following cfg->training_mode (which may differ from m's: ES under decoupled training is built as
 * joint), and writes out atomically.  0, or -1 with one line in err. */
int dump_pair(Electra *m, const ModelConfig *cfg, const Batch *b, const int32_t *replaced, const char *out, DumpResult *r, char *err,
              size_t errlen);
#endif
