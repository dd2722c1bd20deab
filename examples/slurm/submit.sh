#!/usr/bin/env bash
# Queues the sweep's array and, after all its tasks succeed, the merge. Run it from the
# repository root (or wherever SCENARIO, OUT and MERGED are relative to); jobs run there.
#   examples/slurm/submit.sh [sbatch options for both jobs, such as --partition=short]
# Variables: SHARDS (default 8: the array's size and the merge's count), ARRAY (default
# 0-(SHARDS-1); ARRAY=3 reruns shard 3 alone and merges again), CPUS_PER_TASK (default 1),
# FAULTLINE, SCENARIO, OUT, MERGED, POLICIES, PARAMS, REPLICATIONS and EXTRA_ARGS (sweep.sbatch).
set -euo pipefail
here=$(dirname "$0")
export SHARDS=${SHARDS:-8}
if ! [[ $SHARDS =~ ^[1-9][0-9]*$ ]]; then
  echo "SHARDS must be a whole number >= 1, got '$SHARDS'" >&2
  exit 2
fi
array=${ARRAY:-0-$((SHARDS - 1))}
# An absolute path, so tasks find the binary whether or not the site exports PATH.
FAULTLINE=${FAULTLINE:-faultline}
if resolved=$(command -v "$FAULTLINE"); then
  FAULTLINE=$(cd "$(dirname "$resolved")" && pwd)/$(basename "$resolved")
fi
export FAULTLINE
job=$(sbatch --parsable --array="$array" --cpus-per-task="${CPUS_PER_TASK:-1}" "$@" "$here/sweep.sbatch")
job=${job%%;*}
merge=$(sbatch --parsable --dependency="afterok:$job" "$@" "$here/merge.sbatch")
echo "queued sweep array $job (tasks $array of $SHARDS) and merge ${merge%%;*} after it"
