#!/bin/sh
# The fourth study's queue (scripts/ablation-study.sh) on a smoke study: the tiny preset at 40 steps of
# 2 x 32 tokens, two variants (full, nes) x one pretraining seed, one fine-tuning seed of 4 steps per task,
# on the synthetic Brown corpus with the yardsticks' files.  init (with --steps, and with the --minutes
# calibration); stop while the queue waits for the training slot; run waits for a held slot, is stopped (`stop`, SIGTERM) in the middle of the first
# pretraining run, which the next run resumes (deberta pretrain --resume) to its steps; --max-jobs stops
# between runs; a second queue on the study is refused; the last run completes the study and a run after it
# skips everything; status says what is done and left; the report reads the run files; add-seed adds a seed.
# Float build only.
set -u
. "$(dirname "$0")/lib-e2e.sh"
if [ "${PRECISION:-float}" = "double" ]; then echo "SKIPPED: e2e-ablation-study: float build only (the double run has nothing of its own to check here)"; exit 77; fi
e2e_need_bin
e2e_need_h5py
e2e_tmpdir W deberta-e2e-ablation-study
T=$W
export OMP_NUM_THREADS=1 SLOT=$W/slot
A="sh scripts/ablation-study.sh"
. tests/lib-brown.sh
make_brown_corpus "$W/corpus"
D=$W/data
$BIN prep --input "$W/corpus/brown.txt" "$W/corpus/other.txt" --out "$D" --vocab-size 400 --holdout-brown "$W/corpus/brown-tagged" \
    > /dev/null 2>&1 || fail "prep"
$BIN prep-task --task pos --brown "$W/corpus/brown-tagged" --shards "$D" --out "$D/probe-pos" --seq-len 32 > /dev/null 2>&1 || fail "prep-task"
e2e_bad "has no rtd-fixed.h5" -- $A init "$W/x" --data "$D" --steps 4 --brown "$W/corpus/brown-tagged" --deberta "$BIN"
"$PY" scripts/rtd_fixed.py "$D" --seq-len 32 --n-seq 24 --deberta "$BIN" > /dev/null 2>&1 || fail "rtd_fixed.py"

S=$W/st
FT="--ft-seeds 1 --ft-steps 4 --ft-batch 4 --ft-seq-len 24 --ft-eval-every 2"
$A init "$S" --data "$D" --steps 40 --save-every 10 --eval-every 20 --seeds 1 --variants nes --threads 1 --eval-batches 1 $FT \
    --brown "$W/corpus/brown-tagged" --deberta "$BIN" -- --batch 2 --max_seq_len 32 --eval-batches 1 --log-every 1 > "$W/init.log" 2>&1 ||
    { cat "$W/init.log"; fail "init"; }
[ -x "$S/deberta" ] && grep -q '"steps": 40,' "$S/study.json" || fail "init: no binary copy or no step count in study.json"
e2e_bad "already a study" -- $A init "$S" --data "$D" --steps 8 --brown "$W/corpus/brown-tagged" --deberta "$BIN"
$A init "$W/cal" --data "$D" --minutes 0.1 --variants nes --brown "$W/corpus/brown-tagged" --deberta "$BIN" --threads 1 \
    -- --batch 2 --max_seq_len 32 > "$W/cal.log" 2>&1 || { cat "$W/cal.log"; fail "init --minutes"; }
grep -q '"steps_how": "calibrated: deberta pretrain --minutes 0.1 on .*calibration: .* steps in 0.1 minutes' "$W/cal/study.json" ||
    { cat "$W/cal/study.json"; fail "init --minutes: the calibrated steps are not recorded"; }
ok "init: binary copied, the step budget given or calibrated (--minutes), a yardstick file missing or a second init refused"

# queue_behind_slot SECONDS LOG: the slot held for SECONDS in the background ($holder), then the queue
# started in the background ($q), its output in LOG
queue_behind_slot() {
    flock "$SLOT" sleep "$1" &
    holder=$!
    sleep 0.3
    $A run "$S" > "$2" 2>&1 &
    q=$!
}

# stopped while it waits for the slot: it ends at once and has started nothing
queue_behind_slot 30 "$W/run0.log"
i=0
until grep -q 'waiting for the training slot' "$W/run0.log"; do i=$((i + 1)); [ $i -lt 100 ] || { kill $holder; fail "the queue does not wait for the slot"; }; sleep 0.1; done
t0=$(date +%s)
$A stop "$S" > /dev/null 2>&1
wait $q; rc=$?
t1=$(date +%s)
kill $holder; wait $holder 2>/dev/null
[ $rc -eq 143 ] && [ ! -e "$S/finetune/scratch/pos-seed1" ] || { cat "$W/run0.log"; fail "stopped while waiting for the slot: exit $rc, or it started a job"; }
[ $((t1 - t0)) -lt 10 ] || fail "the queue took $((t1 - t0)) s to stop while waiting for the slot (it waited for the slot first)"
ok "stop while the queue waits for the training slot: exit 143 without starting a job"

# the queue waits for a held training slot, then is stopped (`stop`: SIGTERM) in the middle of full-seed1
queue_behind_slot 2 "$W/run1.log"
sleep 0.5
$A status "$S" > "$W/st0.out" 2>&1  # while the queue waits for the slot
e2e_wait_logged "$S/pretrain/full-seed1/metrics.jsonl" 2 $q "$W/run1.log"
$A stop "$S" > "$W/stop.log" 2>&1 || { cat "$W/stop.log"; kill -TERM $q; fail "stop"; }
wait $q; rc=$?
grep -q "^queue: running, pid $q$" "$W/st0.out" || { cat "$W/st0.out"; fail "status of a running queue does not name its pid $q"; }
wait $holder
[ $rc -eq 143 ] || { cat "$W/run1.log"; fail "the stopped queue exited $rc, expected 143"; }
grep -q 'waiting for the training slot' "$W/run1.log" || { cat "$W/run1.log"; fail "the queue did not wait for the held slot"; }
step=$("$PY" -c "import h5py; print(int(h5py.File('$S/pretrain/full-seed1/checkpoint.h5', 'r').attrs['step']))")
[ "$step" -ge 2 ] && [ "$step" -lt 40 ] || fail "full-seed1 stopped at step $step, expected 2..39"
[ -d "$S/finetune/scratch/pos-seed1" ] && [ -s "$S/scratch.json" ] && [ ! -e "$S/results/full-seed1.json" ] || fail "state after the stop"
$A status "$S" > "$W/st1.out" 2>&1 || fail "status"
grep -q "^| full-seed1 | $step/40 | – | 0/1 | 0/1 | started |$" "$W/st1.out" && grep -q '^| nes-seed1 | 0/40 | – | 0/1 | 0/1 | to do |$' "$W/st1.out" &&
    grep -q '^0 of 2 runs done; left: full-seed1, nes-seed1$' "$W/st1.out" && grep -q '^queue: not running$' "$W/st1.out" ||
    { cat "$W/st1.out"; fail "status after the stop"; }
ok "run waits for the training slot; status names the running queue; stop (SIGTERM) stops it at step $step of 40 (exit 143); status says started / to do"

# --max-jobs 1: full-seed1 resumed from its checkpoint to step 40, evaluated, fine-tuned; nes not started
$A run "$S" --max-jobs 1 > "$W/run2.log" 2>&1 || { cat "$W/run2.log"; fail "run --max-jobs 1"; }
grep -q "^== .* resume$" "$S/pretrain/full-seed1/pretrain.log" || fail "full-seed1 was not resumed with --resume"
grep -q "\"invocation\": \"resume\", \"utc_start\": \"[^\"]*\", \"start_step\": $step, \"end_step\": 40" "$S/pretrain/full-seed1/ablate-timing.jsonl" ||
    { cat "$S/pretrain/full-seed1/ablate-timing.jsonl"; fail "no resume from step $step to 40 in ablate-timing.jsonl"; }
"$PY" - "$S/results/full-seed1.json" <<'EOF' || fail "results/full-seed1.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["variant"] == "full" and r["seed"] == 1 and r["steps"] == 40 and r["tokens"] == 40 * 2 * 32, r
for k in ("fx_auc", "probe_acc", "probe_best_acc", "mlm_acc"):
    assert 0 <= r["yardsticks"][k] <= 1, (k, r["yardsticks"])
assert list(r["finetune"]["pos"]) == ["1"] and list(r["finetune"]["genre"]) == ["1"], r["finetune"]
assert r["build"].startswith("deberta ") and "family" in r["cpu"] and r["pretrain_cpu_s"] > 0 and r["pretrain_wall_s"] > 0, r
assert r["command"].startswith("pretrain ") and "--resume" not in r["command"], r["command"]
EOF
[ ! -d "$S/pretrain/nes-seed1" ] && grep -q 'max-jobs 1 reached' "$W/run2.log" || fail "--max-jobs 1 went on to nes-seed1"
ok "the stopped run resumed (deberta pretrain --resume, step $step -> 40), evaluated, fine-tuned; its run file; --max-jobs stops between runs"

# a second queue on the study is refused while the lock is held
flock "$S/queue.lock" sleep 3 &
holder=$!
sleep 0.3
e2e_bad "a queue is already running" -- $A run "$S"
wait $holder
ok "a second queue on the same study is refused (one error line)"

$A run "$S" > "$W/run3.log" 2>&1 || { cat "$W/run3.log"; fail "run to the end"; }
grep -q 'full-seed1: done, skipped' "$W/run3.log" && grep -q 'nes-seed1: done:' "$W/run3.log" && grep -q 'the study is complete' "$W/run3.log" ||
    { cat "$W/run3.log"; fail "the last run"; }
grep -q '^training_mode = decoupled' "$S/pretrain/nes-seed1/config.txt" && grep -q '^embedding_sharing = nes' "$S/pretrain/nes-seed1/config.txt" ||
    fail "nes did not run decoupled with its own tables"
n0=$(cat "$S"/pretrain/*/study-timing.jsonl "$S"/finetune/scratch/study-timing.jsonl | wc -l)
$A run "$S" > "$W/run4.log" 2>&1 || { cat "$W/run4.log"; fail "run of a complete study"; }
[ "$(grep -c 'done, skipped' "$W/run4.log")" = 2 ] && [ "$(cat "$S"/pretrain/*/study-timing.jsonl "$S"/finetune/scratch/study-timing.jsonl | wc -l)" = "$n0" ] ||
    { cat "$W/run4.log"; fail "a run of the complete study did work again"; }
$A status "$S" > "$W/st2.out" 2>&1 && grep -q '^2 of 2 runs done; nothing left$' "$W/st2.out" || { cat "$W/st2.out"; fail "status of the complete study"; }
ok "the study completes; a run after that skips every finished job; status: 2 of 2 done"

$A report "$S" > "$W/rep.out" 2>&1 && grep -q '^| NES | GDES beats NES .*| too few seeds |' "$S/report/report.md" &&
    grep -q '^Floor, .*: pos [01]\.[0-9]* (1), genre [01]\.[0-9]* (1)\.$' "$S/report/report.md" ||
    { cat "$W/rep.out"; fail "report of the smoke study"; }
$A add-seed "$S" --variants nes > /dev/null 2>&1 && $A status "$S" > "$W/st3.out" 2>&1 &&
    grep -q '^2 of 4 runs done; left: full-seed2, nes-seed2$' "$W/st3.out" || { cat "$W/st3.out"; fail "add-seed --variants nes"; }
ok "report reads the run files; add-seed --variants nes queues full-seed2 and nes-seed2"
