/* dump_encoder.h — the encoder half of the parity contract (docs/FORMATS.md "Parity and dump files",
 * encoder parity; `deberta dump-encoder --weights W --inputs I --out O`): a forward of the encoder
 * (dropout off), a loss, its backward, and every activation and gradient written to an HDF5 file. */
#ifndef DEBERTA_TRAIN_DUMP_ENCODER_H
#define DEBERTA_TRAIN_DUMP_ENCODER_H
#include <stddef.h>
#include <stdint.h>
#include "model/encoder.h"
#include "model/task_head.h"

/* `deberta dump-encoder`'s flags besides the model config's --KEY VALUE (model/config.h). */
typedef struct DumpEncoderOptions {
    int init;              /* --init: write an initialised weights file (else run --weights on --inputs) */
    char weights[4096], inputs[4096], out[4096];
    char head[16];         /* --init: "" (none), token, sequence or regression */
    int num_labels;        /* --init with a head: its outputs */
    uint64_t seed;         /* --init: of the initialisation */
    int perturb;           /* --init: perturb every value (model_perturb_params) */
} DumpEncoderOptions;

void dump_encoder_options_default(DumpEncoderOptions *o);
/* One flag of the option table (flag without "--"): 2 if it is a switch (--init, --perturb; value
 * unused), 1 if it took value, 0 if the table has no such flag, -1 with a message on a bad value. */
int dump_encoder_options_set_flag(DumpEncoderOptions *o, const char *flag, const char *value, char *err, size_t errlen);

/* The inputs of one pass: ids and mask [B*T]; with no head the loss is Σ last_hidden ⊙ loss_weight
 * (loss_weight [B*T*H]), with a head its loss on labels (int32 [B*T] token, [B] sequence, -100
 * ignored; float [B] regression: the MSE). */
typedef struct DumpEncoderInput {
    int B, T;
    const int32_t *ids, *mask;
    const real *loss_weight;
    const void *labels;
} DumpEncoderInput;

/* Runs e (its parameters in ps; head NULL: none) on in, backward from the loss (ps's gradients are
 * overwritten), and writes embedding_output, hidden_states/layer_N, loss, logits (with a head) and
 * grad/<name> of every parameter of ps to path, atomically.  *loss: the loss (summed in long double
 * without a head).  0, or -1 with one line in err. */
int dump_encoder_pass(Encoder *e, ParamSet *ps, TaskHead *head, const DumpEncoderInput *in, const char *path, long double *loss, char *err,
                      size_t errlen);
#endif
