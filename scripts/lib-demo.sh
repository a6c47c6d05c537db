# lib-demo.sh — what `make demo`, `make demo-finetune` and `make demo-task` share; each sources it
# after changing to the repository root:  . scripts/lib-demo.sh
# It sets the knobs the three share, unless the environment did: DEMO_DIR (make demo's run, default
# runs/demo), DEMO_MINUTES (its budget, default 10; DEMO_STEPS, a step count, overrides it) and
# THREADS (default: all cores).
#   demo_build          installs what is missing (scripts/install-deps.sh), builds build/deberta
#   demo_pretrain DIR [FLAG...]  the tiny preset pretrained on data/shards into DIR for DEMO_STEPS steps,
#                       or about DEMO_MINUTES minutes; when DIR holds a checkpoint it continues that run
#                       instead (a finished run just re-evaluates)

DEMO_DIR=${DEMO_DIR:-runs/demo}
DEMO_MINUTES=${DEMO_MINUTES:-10}
THREADS=${THREADS:-$(nproc)}

demo_build() {
    sh scripts/install-deps.sh
    make -s -j"$THREADS" build/deberta
}

demo_pretrain() {
    _dir=$1; shift
    if [ -n "${DEMO_STEPS:-}" ]; then _budget="--steps $DEMO_STEPS"; else _budget="--minutes $DEMO_MINUTES"; fi
    if [ -f "$_dir/checkpoint.h5" ]; then
        ./build/deberta pretrain --resume "$_dir" --data data/shards --threads "$THREADS"
    else
        ./build/deberta pretrain --preset tiny --data data/shards --out "$_dir" --threads "$THREADS" "$@" $_budget
    fi
}
