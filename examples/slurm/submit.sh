#!/usr/bin/env bash
# Queues the sweep's array and, after all its tasks succeed, the merge.
set -euo pipefail
cd "$(dirname "$0")"
job=$(sbatch --parsable sweep.sbatch)
sbatch --dependency="afterok:${job%%;*}" merge.sbatch
