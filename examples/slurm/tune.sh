#!/usr/bin/env bash
# A tune on a Slurm cluster, round by round: each round's simulations run as an array of
# SHARDS tasks (tune-shard.sbatch, `sbatch --wait`), then the merge (here: it only reads the
# shard files and races) either writes the tune's files or names the next round.
# Run it where sbatch works (a login node, or inside an allocation), from the folder the
# tune's paths are relative to:
#   examples/slurm/tune.sh scenarios/meeting-analysis-incident.toml -p resilient \
#     --space policy.resilient.budget.retry_tokens=0..4 --objective max:auto_completion_ratio \
#     --objective min:cost_per_success -o results/incident-tune
# Variables: SHARDS (default 8), CPUS_PER_TASK (default 1), FAULTLINE, SBATCH_OPTIONS (sbatch
# options for every array, split at spaces: SBATCH_OPTIONS="--partition=short --account=me"),
# MAX_ROUNDS (default 64: a stop for a tune that never ends).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if (($# == 0)); then
  echo "usage: $0 SCENARIO -p POLICY --space PATH=RANGE ... --objective max:METRIC ... -o OUT" >&2
  exit 2
fi
export SHARDS=${SHARDS:-8}
if ! [[ $SHARDS =~ ^[1-9][0-9]*$ ]]; then
  echo "SHARDS must be a whole number >= 1, got '$SHARDS'" >&2
  exit 2
fi
# An absolute path, so tasks find the binary whether or not the site exports PATH.
FAULTLINE=${FAULTLINE:-faultline}
if resolved=$(command -v "$FAULTLINE"); then
  FAULTLINE=$(cd "$(dirname "$resolved")" && pwd)/$(basename "$resolved")
fi
export FAULTLINE
read -r -a options <<< "${SBATCH_OPTIONS:-}"
for ((round = 1; round <= ${MAX_ROUNDS:-64}; round++)); do
  sbatch --wait --quiet --array="0-$((SHARDS - 1))" --cpus-per-task="${CPUS_PER_TASK:-1}" \
    ${options[@]+"${options[@]}"} "$here/tune-shard.sbatch" "$@"
  merged=$("$FAULTLINE" tune "$@" --merge-shards)
  printf '%s\n' "$merged"
  if grep -q '^wrote ' <<< "$merged"; then
    exit 0
  fi
done
echo "the tune needed more than ${MAX_ROUNDS:-64} rounds; run $0 again to go on" >&2
exit 1
