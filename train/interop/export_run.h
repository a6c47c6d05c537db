/* export_run.h — `deberta export` as a library call: a checkpoint (or a parity weights file) as two
 * Hugging Face DebertaV2 folders, OUTDIR/generator and OUTDIR/discriminator, each with config.json,
 * model.safetensors (F32) and, when the checkpoint carries the tokenizer, tokenizer.json (ours) or
 * spm.model (a SentencePiece model); a fine-tuned model as one folder OUTDIR of
 * DebertaV2For{Token,Sequence}Classification.  Layout and names: docs/FORMATS.md "Export"; the tensor
 * map: train/interop/hf_export.h.  This room sits above the training library: it reads its checkpoints. */
#ifndef DEBERTA_INTEROP_EXPORT_RUN_H
#define DEBERTA_INTEROP_EXPORT_RUN_H
#include <stddef.h>
#include <stdio.h>
#include "train/interop/hf_export.h"

typedef struct ExportOptions {
    char src[4096];          /* a checkpoint or a parity weights file (required) */
    char outdir[4096];       /* required */
    HfExportHeads heads;     /* --mlm-head cls|official|both (default cls), --rtd-head */
    int allow_no_c2c;        /* export a model without the c2c term anyway */
} ExportOptions;

void export_options_default(ExportOptions *o);
/* One flag of the option table (flag without "--"): 2 if it is a switch (value unused), 1 if it took
 * value, 0 if the table has no such flag, -1 with a message on a bad value. */
int export_options_set_flag(ExportOptions *o, const char *flag, const char *value, char *err, size_t errlen);

typedef struct ExportResult {
    int finetuned;           /* 1: one folder of a fine-tuned model */
    const char *arch;        /* finetuned: its Hugging Face class */
    int n_labels;            /* finetuned */
    int n_gen, n_disc;       /* tensors written (finetuned: n_disc only) */
    int checkpoint;          /* the source was a checkpoint (not a weights file) */
    int sharing, use_emd;
    char gdir[4200], ddir[4200];
    const char *tok_note;    /* what became of the tokenizer */
} ExportResult;

/* Writes the folders.  0; errors are one line and exit the process (fatal), warnings one line each. */
int export_run(const ExportOptions *o, ExportResult *r);
/* The summary line. */
void export_report(const ExportOptions *o, const ExportResult *r, FILE *f);
#endif
