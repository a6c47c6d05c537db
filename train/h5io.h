/* h5io.h — reading plain-HDF5 parity files (docs/FORMATS.md "Parity and dump files"): the weights
 * file (config as root attributes, one dataset per parameter) and the full-model batch.  Shared by
 * `deberta dump`, `dump-encoder` and `export`; their outputs are written through data/h5util.h's
 * H5Out.
 *
 * Every function returns 0 on success or -1 with one line in err (no "error: " prefix) naming the
 * file and the problem, e.g.
 *   weights w.h5: parameter 'generator.lm_predictions.lm_head.bias' has shape [41], the model expects [40]
 * so the caller prints it with fatal("%s", err).
 */
#ifndef DEBERTA_H5IO_H
#define DEBERTA_H5IO_H
#include <stddef.h>
#include <stdint.h>
#include "autograd/tensor.h"
#include "data/batch.h"
#include "model/config.h"

/* Applies every root attribute of a weights file that names a config key (model/config.h) to c
 * with config_set (integers of any width, floats, fixed- or variable-length strings; attributes
 * that are not config keys, e.g. "producer", are ignored).  *n_full (may be NULL) gets the number
 * of full-model keys found (gen_num_hidden_layers, embedding_sharing, rtd_lambda, use_emd,
 * training_mode); *has_max_seq_len (may be NULL) whether max_seq_len was among them. */
int h5io_read_config(const char *path, ModelConfig *c, int *n_full, int *has_max_seq_len, char *err, size_t errlen);

/* 1 if path is sealed (docs/FORMATS.md "Sealed HDF5 files": only deberta.c's training files are,
 * intact or not) or an HDF5 file whose root has a "format" attribute (a training checkpoint,
 * train/checkpoint.h), else 0 (e.g. a parity weights file). */
int h5io_is_checkpoint(const char *path);

/* Loads every parameter of ps (finalized) from the dataset of the same name (root level; a nested
 * group path a/b/c is read as the name a.b.c).  Fails on a missing or extra tensor, a wrong shape, a
 * non-float dtype, or a NaN/Inf value. */
int h5io_read_params(const char *path, ParamSet *ps, char *err, size_t errlen);

/* The full-model batch: input_ids, attention_mask, labels, replaced_ids [B,T] integer datasets
 * (read as int32), optional position_ids [B,T].  Validates: same [B,T] everywhere; ids, labels,
 * replaced ids in [0, vocab); mask in {0,1}; labels > 0 only where mask = 1; at least one masked
 * position; position_ids in [0, max_pos).  Fills b (batch_alloc'd; n_masked, n_tokens set),
 * *replaced and *position_ids (malloc'd; *position_ids NULL when absent). */
int h5io_read_batch(const char *path, int vocab, int max_pos, Batch *b, int32_t **replaced, int32_t **position_ids, char *err,
                    size_t errlen);

#endif
