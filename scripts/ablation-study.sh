#!/bin/sh
# ablation-study.sh — the fourth ablation study's queue and report (docs/ABLATIONS.md): init a study,
# run or continue it one job at a time (nohup sh scripts/ablation-study.sh run STUDYDIR &), status,
# stop, add-seed, report (tables, 95 % intervals, verdicts, forest plot).  The work is done by
# scripts/ablation_study.py and scripts/ablation_report.py (/usr/bin/python3: standard library + h5py;
# gnuplot for the plot); this wrapper only finds the interpreter.  Usage: scripts/ablation-study.sh --help.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "error: ablation-study: python3 not found (apt-get install python3 python3-h5py)" >&2; exit 1; }
exec "$PY" "$(dirname "$0")/ablation_study.py" "$@"
