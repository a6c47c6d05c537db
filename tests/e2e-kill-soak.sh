#!/bin/sh
# The short kill soak (scripts/kill-soak.sh; its long form, 20 kills and more, is run by hand): a
# tiny pretraining killed 3 times with SIGKILL or SIGTERM at random moments or during a checkpoint
# write and resumed each time, as one process and as `mpirun -np 2` (the launcher or a rank killed);
# every process gone after each kill, the checkpoint always intact, and the final checkpoint equal to
# an uninterrupted run's (byte-identical for one process, /params and /optim bit-identical for two).
# Exit 77 when a part cannot run (no mpirun or no MPI build): the reason is printed.
cd "$(dirname "$0")/.." || exit 1
sh scripts/kill-soak.sh --np 1 --kills 3 --steps 1200 --seed 1; rc1=$?
[ $rc1 -eq 0 ] || [ $rc1 -eq 77 ] || exit 1
sh scripts/kill-soak.sh --np 2 --kills 3 --steps 1200 --seed 5; rc2=$?
[ $rc2 -eq 0 ] || [ $rc2 -eq 77 ] || exit 1
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || exit 77
echo "e2e-kill-soak: all checks passed"
