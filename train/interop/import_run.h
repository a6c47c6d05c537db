/* import_run.h — `deberta import` as a library call: Hugging Face DebertaV2 folders (the tensor map:
 * train/interop/hf_import.h) as a run directory, RUN/checkpoint.h5 at step 0 + RUN/config.txt, that
 * eval, dump, export and pretrain --init-from read (docs/FORMATS.md "Import").  Sharing: nes (each
 * model keeps its tables; the export gives them back bit for bit) or gdes.
 *
 * The tokenizer (tokenizer, by default HF_DIR/spm.model when there is one) gives the special ids of
 * the run's config ([PAD] [CLS] [SEP] [UNK] [MASK], data/tokfile.h) and travels in the checkpoint, so
 * that `pretrain --init-from` and `eval` accept exactly the shards prep made with it.
 *
 * This room sits above the training library: it writes the training library's checkpoint. */
#ifndef DEBERTA_INTEROP_IMPORT_RUN_H
#define DEBERTA_INTEROP_IMPORT_RUN_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "data/tokfile.h"
#include "model/config.h"
#include "train/interop/hf_import.h"

typedef struct ImportOptions {
    char hf[4096];           /* the discriminator's folder (required) */
    char out[4096];          /* the run directory (required; must not hold a run) */
    char generator[4096];    /* "" or the generator's folder */
    char tokenizer[4096];    /* "" = HF_DIR/spm.model when present */
    char sharing[8];         /* nes or gdes */
    uint64_t seed;           /* of the initialisation of what the files do not hold */
    char **keys;             /* config keys applied after config.json: "--key", "value" pairs (not owned) */
    int n_keys;              /* entries of keys (twice the pairs) */
} ImportOptions;

void import_options_default(ImportOptions *o);
/* One `--flag value` of the option table (flag without "--"): 1 if it was one, 0 if the table has no
 * such flag (a config key, checked by import_run), -1 with a message on a bad value. */
int import_options_set_flag(ImportOptions *o, const char *flag, const char *value, char *err, size_t errlen);

typedef struct ImportResult {
    ModelConfig cfg;         /* the run's config */
    HfImported imp;          /* what was initialised, not read */
    char tokenizer[4200];    /* the tokenizer's path, "" when none */
    int tok_vocab;
    char tok_hash[17];
} ImportResult;

/* Reads the folders, checks every size before allocating, writes RUN.  0; errors are one line and
 * exit the process (fatal), as the commands' library calls do. */
int import_run(const ImportOptions *o, ImportResult *r);
/* The summary lines of an import (what was read, initialised, and the tokenizer's special ids). */
void import_report(const ImportOptions *o, const ImportResult *r, FILE *f);
#endif
