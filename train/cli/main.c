/* main.c — build/deberta: dispatches to the subcommands declared in cli.h (one train/cli/cmd_*.c
 * file per command). */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/cli/cli.h"
#include "train/version.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} Command;

static void usage(const Command *cmds, int n) {
    fprintf(stderr, "usage: deberta <command> [options]   (deberta <command> --help for its options; deberta --version)\n\ncommands:\n");
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  %-10s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv) {
    /* HDF5 would otherwise close every id still open from an atexit handler.  After a failed write
     * (a full disk) a file id whose close failed stays half-open, and that handler then crashes
     * inside the library, turning one clear error into a segfault.  Every file the program writes is
     * closed (and renamed or removed) before it exits, so nothing is lost by skipping the handler;
     * the operating system frees the library's memory.  Must come before any other HDF5 call. */
    H5dont_atexit();
    const Command cmds[] = {
        {"prep", cmd_prep, "text files -> tokenizer + HDF5 token shards"},
        {"pretrain", cmd_pretrain, "ELECTRA-style generator/discriminator pretraining"},
        {"eval", cmd_eval, "held-out MLM and RTD metrics of a checkpoint"},
        {"gradcheck", cmd_gradcheck, "finite-difference check of every op and of the model"},
        {"dump", cmd_dump, "every activation, loss and gradient of one batch into HDF5"},
        {"dump-encoder", cmd_dump_encoder, "encoder parity files: init a weights file, or run one on given inputs"},
        {"export", cmd_export, "checkpoint -> Hugging Face folders (config.json, model.safetensors)"},
        {"prep-task", cmd_prep_task, "labelled data (JSONL, CSV, TSV, CoNLL) or the Brown tasks -> task files"},
        {"finetune", cmd_finetune, "an encoder + task head fine-tuned on a task, tested beside the baselines"},
        {"predict", cmd_predict, "a fine-tuned model on new text (JSONL/CSV/TSV/CoNLL): labels, probabilities, scores"},
        {"fill-mask", cmd_fill_mask, "the generator's most probable tokens for each [MASK] of a text"},
        {"bench", cmd_bench, "timings of the training step and its parts"},
        {"import", cmd_import, "Hugging Face DebertaV2 folder(s) -> run directory (checkpoint.h5, config.txt)"},
        {"encode", cmd_encode, "text lines -> token ids (SentencePiece .model or tokenizer.bin)"},
        {"seal", cmd_seal, "re-seal HDF5 files changed on purpose or written before the seal (docs/FORMATS.md)"},
    };
    const int n = (int)(sizeof(cmds) / sizeof(cmds[0]));
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(cmds, n);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("%s\n", deberta_version());
        return 0;
    }
    /* several ranks of any other command would each do the whole work into the same files */
    const char *ranks = getenv("OMPI_COMM_WORLD_SIZE");
    const int parallel = !strcmp(argv[1], "pretrain") || (!strcmp(argv[1], "bench") && argc > 2 && !strcmp(argv[2], "allreduce"));
    if (ranks && atoi(ranks) > 1 && !parallel) {
        fprintf(stderr, "error: '%s' runs as one process; only 'pretrain' (and 'bench allreduce') run under mpirun\n", argv[1]);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(argv[1], cmds[i].name) != 0) continue;
        return cmds[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "error: unknown command '%s' (run 'deberta --help' for the list)\n", argv[1]);
    return 2;
}
