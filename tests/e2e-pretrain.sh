#!/bin/sh
# End-to-end pretraining on a tiny model and a small generated corpus:
#   exact resume (N steps, stop, --resume, N more == 2N uninterrupted: metrics and weights bit-identical),
#   determinism (same seed + threads -> identical metrics.jsonl),
#   numbered checkpoints (--keep-every) and resume's check of RUNDIR/config.txt against the checkpoint,
#   SIGKILL while a checkpoint is written -> resume from the previous good one, same result,
#   guard rails (non-finite steps stop the run, the last good checkpoint is intact),
#   bad flags / missing data / corrupt checkpoint -> one error line, non-zero exit, nothing overwritten.
# Runs in the float build only (the double build would repeat the same logic).
set -u
. "$(dirname "$0")/lib-e2e.sh"
BUILD=${BUILD:-build}
if [ "${PRECISION:-float}" = "double" ]; then echo "SKIPPED: e2e-pretrain: float build only (the double run has nothing of its own to check here)"; exit 77; fi
D=$BUILD/deberta
W=$(mktemp -d /tmp/deberta-e2e-pretrain.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=2

# a small corpus: 300 documents of generated sentences (deterministic)
e2e_corpus 7 300 5 1 > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/shards" --vocab-size 320 --val-fraction 0.1 > "$W/prep.log" 2>&1 || { cat "$W/prep.log"; fail "prep"; }

COMMON="--preset test --max_seq_len 32 --data $W/shards --batch 4 --steps 8 --eval-every 4 --eval-batches 2 --save-every 4 --log-every 1 --lr 1e-3 --hidden_dropout_prob 0.1 --attention_probs_dropout_prob 0.1"
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT $D pretrain $COMMON --out "$W/A" > "$W/A.log" 2>&1 || { cat "$W/A.log"; fail "run A"; }
[ "$(grep -c '"kind":"train"' "$W/A/metrics.jsonl")" = 8 ] || fail "run A: expected 8 train lines in metrics.jsonl"
[ "$(grep -c '"kind":"eval"' "$W/A/metrics.jsonl")" = 2 ] || fail "run A: expected 2 eval lines"
ok "run of 8 steps writes metrics.jsonl (8 train + 2 eval lines), config.txt, cmdline.txt, checkpoint.h5"
for f in config.txt cmdline.txt checkpoint.h5; do [ -f "$W/A/$f" ] || fail "run A: $f missing"; done

# the learning rates (train/options.c): unset, the generator's peak is 2.5e-4 and the discriminator's
# twice the generator's (--lr moves both, --d-lr sets its own, 0 = the generator's); a joint run keeps
# one optimizer at 5e-4.  Resolved once at the start and written to config.txt.
LR="--preset test --max_seq_len 32 --data $W/shards --batch 4 --steps 2 --eval-every 0 --save-every 0 --log-every 1"
lr_check() { # NAME WANT_TRAIN_LR WANT_TRAIN_D_LR WANT_G_LR WANT_D_LR [flags...]: step 1 runs at the peak (no warm-up in 2 steps)
    n=$1 tl=$2 td=$3 gl=$4 dl=$5; shift 5
    $D pretrain $LR --out "$W/lr-$n" "$@" > "$W/lr-$n.log" 2>&1 || { cat "$W/lr-$n.log"; fail "lr run $n"; }
    got=$(awk -F' = ' '$1 == "train_lr" { l = $2 } $1 == "train_d_lr" { d = $2 } END { printf "%.6g %.6g", l, d }' "$W/lr-$n/config.txt")
    [ "$got" = "$tl $td" ] || fail "lr run $n ($*): config.txt train_lr, train_d_lr = $got, want $tl $td"
    got=$(head -n 1 "$W/lr-$n/metrics.jsonl" | sed 's/.*"g_lr":\([^,]*\),"d_lr":\([^,]*\),.*/\1 \2/')
    [ "$(printf '%.6g %.6g' $got)" = "$gl $dl" ] || fail "lr run $n ($*): step 1 g_lr, d_lr = $got, want $gl $dl"
}
lr_check default 0.00025 0.0005 0.00025 0.0005
lr_check lr 0.001 0.002 0.001 0.002 --lr 1e-3
lr_check dlr 0.00025 0.000244141 0.00025 0.000244141 --d-lr 0.000244140625
lr_check dlr0 0.00025 0 0.00025 0.00025 --d-lr 0
lr_check joint 0.0005 0 0.0005 0.0005 --training_mode joint
lr_check joint-lr 0.001 0 0.001 0.001 --training_mode joint --lr 1e-3
ok "learning rates: generator 2.5e-4, discriminator 2x (--lr moves both, --d-lr its own, 0 = the generator's); joint 5e-4"

# determinism (run C under the wait policy the user sets; A under the one the binary chose at start)
OMP_WAIT_POLICY=PASSIVE $D pretrain $COMMON --out "$W/C" > "$W/C.log" 2>&1 || fail "run C"
cmp -s "$W/A/metrics.jsonl" "$W/C/metrics.jsonl" || fail "two runs with the same seed wrote different metrics.jsonl"
ok "determinism: two runs with the same seed and threads write identical metrics.jsonl (whatever the OpenMP wait policy)"
grep -Eq '^data: .*; OpenMP wait (GOMP_SPINCOUNT=10000 \(machine idle at start\)|OMP_WAIT_POLICY=PASSIVE \(other tasks running at start\))$' "$W/A.log" \
    || { grep '^data:' "$W/A.log"; fail "run A: the data: line does not name the wait policy chosen at start"; }
grep -q '^data: .*; OpenMP wait OMP_WAIT_POLICY=PASSIVE (from the environment)$' "$W/C.log" \
    || { grep '^data:' "$W/C.log"; fail "run C: the data: line does not name the user's wait policy"; }
ok "the data: line names the OpenMP wait policy: chosen at start, or the user's"
# OpenBLAS's kernel set (train/cli/omp_policy.c): a user's OPENBLAS_CORETYPE is kept; unset, the binary keeps
# OpenBLAS's own choice (DEBERTA_NO_REEXEC=1 shows it) unless that is a fallback without AVX2 on a CPU with
# AVX2 and FMA, where it runs Haswell and says so
v=$(OPENBLAS_CORETYPE=Prescott $D --version)
case $v in *"BLAS Prescott, gemm"*) ;; *) fail "OPENBLAS_CORETYPE=Prescott: --version says '$v'" ;; esac
own=$(env -u OPENBLAS_CORETYPE DEBERTA_NO_REEXEC=1 $D --version | sed -n 's/.*, BLAS \([A-Za-z0-9_]*\).*/\1/p')
v=$(env -u OPENBLAS_CORETYPE $D --version)
want="BLAS $own, gemm"
case $own in Prescott|Core2|Penryn|Dunnington|Nehalem|Atom|Katmai|Sandybridge|Generic|generic)
    grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && want="BLAS Haswell set by deberta: OpenBLAS chose $own, gemm" ;; esac
case $v in *"$want"*) ;; *) fail "OpenBLAS chose $own here: --version says '$v', want '$want'" ;; esac
# DEBERTA_BLAS_CORE is the re-exec's note to itself: kept only as it writes it, for the set in force
bogus() { case $2 in *"$3"*) fail "DEBERTA_BLAS_CORE from the environment ($1) reached --version: '$2'" ;; esac; }
bogus unset "$(env -u OPENBLAS_CORETYPE DEBERTA_BLAS_CORE="set by deberta: OpenBLAS chose Bogus" $D --version)" Bogus
bogus no-reexec "$(env -u OPENBLAS_CORETYPE DEBERTA_NO_REEXEC=1 DEBERTA_BLAS_CORE="set by deberta: OpenBLAS chose Bogus" $D --version)" Bogus
# with OPENBLAS_CORETYPE set, a note not in the re-exec's form, or for another set than the one in force, is dropped
bogus Haswell "$(OPENBLAS_CORETYPE=Haswell DEBERTA_BLAS_CORE="hand-set" $D --version)" hand-set
bogus Haswell "$(OPENBLAS_CORETYPE=Haswell DEBERTA_BLAS_CORE="set by deberta: OpenBLAS chose Bogus" $D --version)" "set by deberta"
bogus Sandybridge "$(OPENBLAS_CORETYPE=Sandybridge DEBERTA_BLAS_CORE="set by deberta: OpenBLAS chose Prescott" $D --version)" "set by deberta"
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    v=$(OPENBLAS_CORETYPE=Haswell DEBERTA_BLAS_CORE="set by deberta: OpenBLAS chose Prescott" $D --version)
    case $v in *"BLAS Haswell set by deberta: OpenBLAS chose Prescott, gemm"*) ;;
        *) fail "the re-exec's own note (Haswell for Prescott) was dropped: '$v'" ;; esac
fi
# the benchmark scripts read that note (scripts/lib-bench.sh): on a fallback CPU the set deberta runs,
# OpenBLAS's own choice, and the set the PyTorch runs get
printf '#!/bin/sh\necho "deberta 0.9 (commit x, float, MPI on, BLAS Haswell set by deberta: OpenBLAS chose Prescott, gemm oneDNN)"\n' >"$W/fakever"
chmod +x "$W/fakever"
tset=Haswell; grep -qw avx512f /proc/cpuinfo && tset=SkylakeX
r=$(env -u OPENBLAS_CORETYPE -u TORCH_CORETYPE sh -c ". '$(dirname "$0")/../scripts/lib-bench.sh'; bench_torch_coretype '$W/fakever'; echo \$CORE \$OWN \$TCORE")
[ "$r" = "Haswell Prescott $tset" ] || fail "lib-bench.sh read a fallback CPU's --version as '$r', want 'Haswell Prescott $tset'"
ok "OpenBLAS's kernel set: the user's OPENBLAS_CORETYPE kept; unset, OpenBLAS's choice ($own) as the binary reports it ('$want'); a DEBERTA_BLAS_CORE other than the re-exec's note ignored; lib-bench.sh reads the note"
grep -Eq '^data: .*; gemm kernel (oneDNN|own AVX-512|OpenBLAS); OpenMP wait ' "$W/A.log" \
    || { grep '^data:' "$W/A.log"; fail "run A: the data: line does not name the gemm kernel"; }
ok "the data: line names the gemm kernel"
# the kernel choice (autograd/gemm.c): oneDNN when the build has it and the CPU executes AVX-512 F/BW/VL;
# else the own kernel when the CPU has avx512f and OpenBLAS's core lacks it; else OpenBLAS.
# DEBERTA_GEMM=openblas asks for OpenBLAS; an unknown value is one error line.
line=$($D bench --preset test --steps 1 --warmup 0 --profile 0 --no-sgemm | head -n 1)
core=${line##*BLAS core }
want=OpenBLAS
if grep -qw avx512f /proc/cpuinfo; then case $core in SkylakeX|Cooperlake|SapphireRapids) ;; *) want="own AVX-512" ;; esac; fi
if grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo \
    && ldd "$D" | grep -q libdnnl; then want=oneDNN; fi
case $line in *"gemm kernel $want, BLAS core"*) ;; *) fail "bench chose the wrong gemm kernel (want $want): $line" ;; esac
DEBERTA_GEMM=openblas $D bench --preset test --steps 1 --warmup 0 --profile 0 --no-sgemm | head -n 1 | grep -q "gemm kernel OpenBLAS," \
    || fail "DEBERTA_GEMM=openblas did not give OpenBLAS"
E2E_DIR=$W
e2e_bad --rc any '^error: DEBERTA_GEMM=blis: want openblas' -- env DEBERTA_GEMM=blis $D bench --preset test --steps 1 --warmup 0 --profile 0 --no-sgemm
ok "gemm kernel: $want here (BLAS core $core); DEBERTA_GEMM=openblas gives OpenBLAS, an unknown kernel one error line"
# the benchmark's step keeps dropout 0.1 though the tiny preset pretrains without it; a flag sets it
B1="bench --preset tiny --seq 8 --batch 1 --steps 1 --warmup 0 --profile 0 --no-sgemm"
$D $B1 | grep -q '"dropout": 0.1, "attention_dropout": 0.1}' || fail "bench --preset tiny: not at dropout 0.1"
$D $B1 --hidden_dropout_prob 0 | grep -q '"dropout": 0, "attention_dropout": 0.1}' || fail "bench --hidden_dropout_prob 0: not 0 / 0.1"
$D $B1 --attention-probs-dropout-prob 0 | grep -q '"dropout": 0.1, "attention_dropout": 0}' || fail "bench --attention-probs-dropout-prob 0: not 0.1 / 0"
ok "bench: dropout 0.1 on the tiny preset unless a flag sets it (each of the two on its own)"

# exact resume
$D pretrain $COMMON --out "$W/B" --stop-after 4 > "$W/B1.log" 2>&1 || { cat "$W/B1.log"; fail "run B part 1"; }
$D pretrain --resume "$W/B" --data "$W/shards" > "$W/B2.log" 2>&1 || { cat "$W/B2.log"; fail "run B resume"; }
cmp -s "$W/A/metrics.jsonl" "$W/B/metrics.jsonl" || { diff "$W/A/metrics.jsonl" "$W/B/metrics.jsonl" | head; fail "resumed run's metrics differ"; }
h5diff -q "$W/A/checkpoint.h5" "$W/B/checkpoint.h5" /params /params || fail "resumed run's weights differ"
h5diff -q "$W/A/checkpoint.h5" "$W/B/checkpoint.h5" /optim /optim || fail "resumed run's optimizer moments differ"
ok "exact resume: 4 steps + --resume 4 steps == 8 uninterrupted steps (metrics.jsonl identical, /params and /optim bit-identical)"

# sequence-length curriculum: 3 of 8 steps at 8-token sequences (4 x 32 / 8 = 16 per batch), then 32;
# a run stopped inside the short phase and one stopped at the switch both resume exactly
$D pretrain $COMMON --out "$W/Q" --short-seq-len 8 --short-frac 0.375 > "$W/Q.log" 2>&1 || { cat "$W/Q.log"; fail "curriculum run"; }
grep -q "curriculum: steps 1-3 read 16 x 8-token sequences" "$W/Q.log" || { cat "$W/Q.log"; fail "curriculum line missing"; }
grep '"kind":"train"' "$W/Q/metrics.jsonl" | grep -c '"seq_len":8' | grep -qx 3 || fail "curriculum: not 3 steps at 8 tokens"
h5diff -q "$W/A/checkpoint.h5" "$W/Q/checkpoint.h5" /params /params >/dev/null 2>&1 && fail "the curriculum changed nothing"
grep -q "train_short_seq_len = 8" "$W/Q/config.txt" || fail "curriculum options not saved"
grep -q "train_short" "$W/A/config.txt" && fail "a run without a curriculum saved curriculum options"
for s in 2 3; do
    $D pretrain $COMMON --out "$W/Q$s" --short-seq-len 8 --short-frac 0.375 --stop-after $s > "$W/Q$s.log" 2>&1 || fail "curriculum run stopped at $s"
    $D pretrain --resume "$W/Q$s" --data "$W/shards" > "$W/Q$s-2.log" 2>&1 || { cat "$W/Q$s-2.log"; fail "curriculum resume at $s"; }
    cmp -s "$W/Q/metrics.jsonl" "$W/Q$s/metrics.jsonl" || { diff "$W/Q/metrics.jsonl" "$W/Q$s/metrics.jsonl" | head; fail "curriculum resumed at $s: metrics differ"; }
    h5diff -q "$W/Q/checkpoint.h5" "$W/Q$s/checkpoint.h5" /params /params || fail "curriculum resumed at $s: weights differ"
done
ok "curriculum (--short-seq-len 8 --short-frac 0.375): 3 steps at 8 tokens then 32; resumed inside the short phase and at the switch == uninterrupted"

# the default curriculum: at max_seq_len >= 128 (here the test shape stretched to 128 positions) half
# the steps read 32-token sequences unless --short-seq-len 0; below 128 none (run A above)
L128="--preset test --max_position_embeddings 128 --max_seq_len 128 --data $W/shards --batch 2 --steps 4 --eval-every 0 --save-every 0"
$D pretrain $L128 --out "$W/L" > "$W/L.log" 2>&1 || { cat "$W/L.log"; fail "128-token run"; }
grep -q "curriculum: steps 1-2 read 8 x 32-token sequences per micro-batch, then 2 x 128" "$W/L.log" || { cat "$W/L.log"; fail "128 tokens: no default curriculum"; }
grep -q "train_short_seq_len = 32" "$W/L/config.txt" || fail "128 tokens: the default curriculum is not saved"
$D pretrain $L128 --out "$W/L0" --short-seq-len 0 > "$W/L0.log" 2>&1 || { cat "$W/L0.log"; fail "128-token run without curriculum"; }
grep -q "curriculum" "$W/L0.log" "$W/L0/config.txt" && fail "--short-seq-len 0 still ran a curriculum"
ok "default curriculum: 32-token sequences for half the steps at max_seq_len 128 (saved in config.txt); --short-seq-len 0 turns it off"

# --minutes: each phase of the curriculum timed (the median of at least 3 steps, for about 1 % of the
# budget) and one evaluation; the steps it chose saved in config.txt and run to the end, the same run as
# --steps with that count (the calibration leaves no trace)
MINUTES="$L128 --eval-every 300 --eval-batches 2 --log-every 1"
$D pretrain $MINUTES --minutes 0.1 --out "$W/MIN" > "$W/MIN.log" 2>&1 || { cat "$W/MIN.log"; fail "--minutes run"; }
cal=$(grep '^calibration:' "$W/MIN.log") || { cat "$W/MIN.log"; fail "--minutes: no calibration line"; }
n_short=$(echo "$cal" | sed -n 's/.*medians of \([0-9]*\) and \([0-9]*\) steps.*/\1/p')
n_full=$(echo "$cal" | sed -n 's/.*medians of \([0-9]*\) and \([0-9]*\) steps.*/\2/p')
chosen=$(echo "$cal" | sed -n 's/.*-> \([0-9]*\) steps in 0.1 minutes$/\1/p')
[ -n "$n_short" ] && [ "$n_short" -ge 3 ] && [ -n "$n_full" ] && [ "$n_full" -ge 3 ] || fail "--minutes: not a median of >= 3 steps per phase: $cal"
[ -n "$chosen" ] || fail "--minutes: the calibration line names no step count: $cal"
[ "$chosen" -ge 20 ] || chosen=20
grep -qx "train_steps = $chosen" "$W/MIN/config.txt" || fail "--minutes: config.txt does not hold the $chosen steps chosen"
grep '"kind":"train"' "$W/MIN/metrics.jsonl" | tail -n 1 | grep -q "\"step\":$chosen," || fail "--minutes: the run did not end at step $chosen"
$D pretrain $MINUTES --steps "$chosen" --out "$W/MIN2" > "$W/MIN2.log" 2>&1 || { cat "$W/MIN2.log"; fail "--steps $chosen run"; }
cmp -s "$W/MIN/metrics.jsonl" "$W/MIN2/metrics.jsonl" || { diff "$W/MIN/metrics.jsonl" "$W/MIN2/metrics.jsonl" | head -4; fail "--minutes: metrics differ from --steps $chosen"; }
h5diff -q "$W/MIN/checkpoint.h5" "$W/MIN2/checkpoint.h5" /params /params || fail "--minutes: weights differ from --steps $chosen"
ok "--minutes 0.1: $(echo "$cal" | sed 's/^calibration: //'); config.txt holds them, the run ends there, bit-identical to --steps $chosen"

# numbered checkpoints: --keep-every 3 keeps checkpoint-0000003.h5 and -0000006.h5 beside the latest, also across a resume
$D pretrain $COMMON --out "$W/E" --keep-every 3 --stop-after 4 > "$W/E1.log" 2>&1 || { cat "$W/E1.log"; fail "run E part 1"; }
$D pretrain --resume "$W/E" --data "$W/shards" > "$W/E2.log" 2>&1 || { cat "$W/E2.log"; fail "run E resume"; }
[ "$(ls "$W/E" | grep -c '^checkpoint-.*\.h5$')" = 2 ] || { ls "$W/E"; fail "--keep-every 3 over 8 steps: expected 2 numbered checkpoints"; }
for s in 0000003 0000006; do [ -f "$W/E/checkpoint-$s.h5" ] || fail "--keep-every 3: checkpoint-$s.h5 missing"; done
cmp -s "$W/A/metrics.jsonl" "$W/E/metrics.jsonl" || fail "--keep-every changed the run"
h5diff -q "$W/A/checkpoint.h5" "$W/E/checkpoint.h5" /params /params || fail "--keep-every changed the weights"
ok "--keep-every 3: checkpoint-0000003.h5 and checkpoint-0000006.h5 kept (across a resume), the run unchanged"

# SIGKILL while the step-8 checkpoint is being written: the step-4 checkpoint survives and resuming reproduces A
$D pretrain $COMMON --out "$W/K" --stop-after 4 > "$W/K1.log" 2>&1 || fail "run K part 1"
cp "$W/K/checkpoint.h5" "$W/K4.h5"
DEBERTA_CHECKPOINT_CRASH_AFTER=5 $D pretrain --resume "$W/K" --data "$W/shards" > "$W/K2.log" 2>&1
rc=$?
[ $rc -ne 0 ] || fail "the crash hook did not kill the writer"
cmp -s "$W/K/checkpoint.h5" "$W/K4.h5" || fail "the checkpoint was changed by a killed writer"
$D pretrain --resume "$W/K" --data "$W/shards" > "$W/K3.log" 2>&1 || { cat "$W/K3.log"; fail "resume after SIGKILL"; }
cmp -s "$W/A/metrics.jsonl" "$W/K/metrics.jsonl" || fail "run resumed after a SIGKILL has different metrics"
h5diff -q "$W/A/checkpoint.h5" "$W/K/checkpoint.h5" /params /params || fail "run resumed after a SIGKILL has different weights"
ok "SIGKILL during a checkpoint write (exit $rc): previous checkpoint intact, resume reproduces the uninterrupted run"

# guard rails: an absurd learning rate makes every step non-finite -> stop with the checkpoint intact
$D pretrain $COMMON --out "$W/N" --stop-after 2 > /dev/null 2>&1 || fail "run N part 1"
cp "$W/N/checkpoint.h5" "$W/N2.h5"
$D pretrain --preset test --max_seq_len 32 --data "$W/shards" --batch 4 --steps 8 --lr 1e30 --max-grad-norm 0 --warmup 0 --max-bad-steps 2 --out "$W/N2" > "$W/N2.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$W/N2.log"; fail "non-finite steps: expected exit 1, got $rc"; }
grep -q "consecutive steps had a non-finite" "$W/N2.log" || { cat "$W/N2.log"; fail "non-finite steps: no clear message"; }
grep -q '"skipped":1' "$W/N2/metrics.jsonl" || fail "skipped steps are not logged"
ok "non-finite steps are skipped, logged, and stop the run after --max-bad-steps with a clear error"

# bad input: one error line, non-zero exit, nothing overwritten
E2E_DIR=$W
expect_err() { _rc=$1 _p=$2; shift 2; e2e_bad --rc "$_rc" "^error: .*$_p" -- "$@"; } # expected-rc pattern command...: one error line (lib-e2e.sh)
expect_err 2 "--steps wants" $D pretrain --data "$W/shards" --out "$W/X" --steps abc
expect_err 2 "unknown option" $D pretrain --data "$W/shards" --out "$W/X" --bogus 1
expect_err 2 "required" $D pretrain --out "$W/X"
expect_err 1 "" $D pretrain --data "$W/nonexistent" --out "$W/X"
expect_err 1 "already holds a run" $D pretrain $COMMON --out "$W/A"
cmp -s "$W/A/metrics.jsonl" "$W/C/metrics.jsonl" || fail "a refused run overwrote metrics.jsonl"
expect_err 1 "" $D pretrain --resume "$W/nothing-here" --data "$W/shards"
cp -r "$W/A" "$W/T"; head -c 20000 "$W/A/checkpoint.h5" > "$W/T/checkpoint.h5"; cp "$W/T/checkpoint.h5" "$W/T.h5"
expect_err 1 "checkpoint" $D pretrain --resume "$W/T" --data "$W/shards"
cmp -s "$W/T/checkpoint.h5" "$W/T.h5" || fail "a refused resume changed the corrupt checkpoint"
expect_err 2 "only --data" $D pretrain --resume "$W/A" --data "$W/shards" --lr 1
cp -r "$W/B" "$W/M"; sed -i 's/^hidden_size = .*/hidden_size = 8/' "$W/M/config.txt"; cp "$W/M/checkpoint.h5" "$W/M.h5"
expect_err 1 "'hidden_size' is .* in the checkpoint but 8 now" $D pretrain --resume "$W/M" --data "$W/shards"
cmp -s "$W/M/checkpoint.h5" "$W/M.h5" || fail "a resume refused for its config changed the checkpoint"
# a checkpoint whose config lost its train_lr line (sealed again, no config.txt): refused, not trained at a guessed rate
cp -r "$W/B" "$W/R"; rm "$W/R/config.txt"
/usr/bin/python3 - "$W/R/checkpoint.h5" <<'PY' || fail "h5py: could not rewrite the checkpoint's config"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    text = f["config"][()].decode()
    del f["config"]
    f.create_dataset("config", data=np.bytes_("".join(l for l in text.splitlines(True) if not l.startswith("train_lr ")).encode()))
PY
$D seal "$W/R/checkpoint.h5" > /dev/null || fail "seal of the edited checkpoint"; cp "$W/R/checkpoint.h5" "$W/R.h5"
expect_err 1 "has no train_lr or train_d_lr" $D pretrain --resume "$W/R" --data "$W/shards"
cmp -s "$W/R/checkpoint.h5" "$W/R.h5" || fail "a resume refused for a missing rate changed the checkpoint"
expect_err 1 "" $D eval "$W/T/checkpoint.h5" --data "$W/shards"
ok "bad flags, missing data, existing run, missing/truncated checkpoint, config.txt that disagrees with the checkpoint, a checkpoint config without its rate: one error line, non-zero exit, nothing overwritten"

# eval reproduces the run's final evaluation
$D eval "$W/A/checkpoint.h5" --data "$W/shards" --batches 2 --batch 4 > "$W/eval.txt" 2>&1 || fail "eval"
last=$(grep '"kind":"eval"' "$W/A/metrics.jsonl" | tail -1)
auc=$(echo "$last" | sed 's/.*"rtd_auc":\([^,}]*\).*/\1/')
grep -q "AUC $(printf '%.4f' "$auc")" "$W/eval.txt" || { cat "$W/eval.txt"; echo "$last"; fail "deberta eval disagrees with the run's last evaluation"; }
flagged=$(echo "$last" | sed 's/.*"rtd_flagged":\([0-9]*\).*/\1/')
grep -q "^ *$flagged tokens flagged" "$W/eval.txt" || { cat "$W/eval.txt"; echo "$last"; fail "deberta eval flags other tokens than the run's last evaluation"; }
ok "deberta eval reproduces the run's final evaluation"
echo "e2e-pretrain: all checks passed"
