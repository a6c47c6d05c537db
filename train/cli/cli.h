/* cli.h — the subcommands of build/deberta.  Each lives in its own train/cli/cmd_*.c file. */
#ifndef DEBERTA_CLI_H
#define DEBERTA_CLI_H
#include <stddef.h>
/* "error: <cmd>: <message> (see deberta <cmd> --help)" on stderr; returns 2, the exit code of a
 * command-line mistake. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What the idle OpenMP threads do between parallel regions, as one phrase for logs: the choice
 * build/deberta made at start (train/cli/omp_policy.c), the user's OMP_WAIT_POLICY / GOMP_SPINCOUNT, or
 * libgomp's default.  Writes at most n bytes to buf and returns buf. */
char *omp_wait_describe(char *buf, size_t n);

int cmd_prep(int argc, char **argv);      /* text -> tokenizer + HDF5 shards         (train/cli/cmd_prep.c) */
int cmd_pretrain(int argc, char **argv);  /* ELECTRA-style G/D pretraining           (train/cli/cmd_pretrain.c) */
int cmd_eval(int argc, char **argv);      /* held-out metrics of a checkpoint        (train/cli/cmd_eval.c) */
int cmd_gradcheck(int argc, char **argv); /* finite-difference checks                (train/cli/cmd_gradcheck.c) */
int cmd_dump(int argc, char **argv);      /* every activation/gradient of one batch  (train/cli/cmd_dump.c) */
int cmd_dump_encoder(int argc, char **argv); /* encoder parity files                (train/cli/cmd_dump_encoder.c) */
int cmd_export(int argc, char **argv);    /* Hugging Face folder                     (train/cli/cmd_export.c) */
int cmd_prep_task(int argc, char **argv); /* labelled text -> task files             (train/cli/cmd_prep_task.c) */
int cmd_finetune(int argc, char **argv);  /* encoder + task head fine-tuning         (train/cli/cmd_finetune.c) */
int cmd_predict(int argc, char **argv);  /* a fine-tuned model on new text          (train/cli/cmd_predict.c) */
int cmd_fill_mask(int argc, char **argv); /* the generator's top-k for each [MASK]   (train/cli/cmd_fill_mask.c) */
int cmd_bench(int argc, char **argv);     /* timings                                 (train/cli/cmd_bench.c) */
int cmd_import(int argc, char **argv);    /* Hugging Face DebertaV2 -> run directory (train/cli/cmd_import.c) */
int cmd_encode(int argc, char **argv);    /* text lines -> token ids                 (train/cli/cmd_encode.c) */
int cmd_seal(int argc, char **argv);      /* whole-file seal of HDF5 files           (train/cli/cmd_seal.c) */
#endif
