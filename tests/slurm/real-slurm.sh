#!/usr/bin/env bash
# The Slurm recipe on a real single-node Slurm (Debian's slurmctld, slurmd, slurm-client and
# munge), as docs/cluster.md tells a user to run it:
#   1. examples/slurm/submit.sh from a checkout's root, on a small grid (its variables), then
#      the merged folder compared byte for byte with the same sweep on one machine;
#   2. the same submission with one array task cancelled: the merge job must be cancelled by
#      Slurm (it would otherwise wait for ever), and `ARRAY=K examples/slurm/submit.sh` must
#      rerun that shard alone and merge the complete set, again equal to one machine's;
#   3. examples/slurm/tune.sh: a tune whose rounds run as arrays of 3 tasks (sbatch --wait),
#      each merged, whose files must equal the same tune on one machine.
# Its own munged, slurmctld and slurmd run on private ports and folders under a temporary
# folder, and are stopped by PID however the script ends.
# Usage: tests/slurm/real-slurm.sh PATH/TO/faultline   (exit 77 when Slurm is not installed)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
for daemon in munged slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
  if ! command -v "$daemon" >/dev/null && [[ ! -x /usr/sbin/$daemon ]]; then
    echo "SKIPPED: $daemon is not installed (apt-get install slurmctld slurmd slurm-client munge)"
    exit 77
  fi
done
export PATH=$PATH:/usr/sbin
started=$SECONDS
say() { printf '[%3ds] %s\n' $((SECONDS - started)) "$*"; }

state=$(mktemp -d /tmp/faultline-slurm.XXXXXX)
pids=()
stop() {
  local status=$?
  # Only this script's own controller: before SLURM_CONF names it, scancel would reach the
  # site's Slurm and cancel the user's real jobs.
  if [[ ${SLURM_CONF:-} == "$state/slurm.conf" ]]; then
    scancel --quiet --user="$(id -un)" 2>/dev/null || true
  fi
  for pidfile in "$state"/slurmd.pid "$state"/slurmctld.pid "$state"/munged.pid; do
    if [[ -s $pidfile ]]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
  done
  sleep 1
  if ((status != 0)); then
    echo "--- slurmctld log (last lines) ---"; tail -n 20 "$state/slurmctld.log" 2>/dev/null || true
    echo "--- slurmd log (last lines) ---"; tail -n 20 "$state/slurmd.log" 2>/dev/null || true
  fi
  rm -rf "$state"
  exit "$status"
}
trap stop EXIT

# Ports from the process id, so two checkouts on one machine do not meet.
port=$((20000 + ($$ % 5000) * 2))
node=$(hostname -s)
mkdir -p "$state/spool" "$state/save"
head -c 1024 /dev/urandom > "$state/munge.key"
chmod 400 "$state/munge.key"
munged --force --socket="$state/munge.sock" --key-file="$state/munge.key" \
  --log-file="$state/munged.log" --pid-file="$state/munged.pid" --seed-file="$state/munged.seed"
cat > "$state/slurm.conf" <<CONF
ClusterName=faultline
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$state/munge.sock
CredType=cred/munge
SlurmUser=$(id -un)
SlurmdUser=root
StateSaveLocation=$state/save
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=3600
NodeName=$node NodeAddr=127.0.0.1 CPUs=2 RealMemory=4096 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$state/slurm.conf
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  if sinfo --noheader --states=idle --format=%N 2>/dev/null | grep -q .; then break; fi
  sleep 0.5
done
sinfo --noheader --states=idle --format=%N | grep -q . || { echo "the node never became idle"; exit 1; }
say "Slurm $(sinfo --version | cut -d' ' -f2) up: node $node, 2 CPUs, ports $port-$((port + 1))"

# A checkout as a user has it: scenarios/ and examples/ at the root, the binary on PATH.
work=$state/checkout
mkdir -p "$work/bin"
ln -s "$root/scenarios" "$work/scenarios"
ln -s "$root/examples" "$work/examples"
ln -s "$binary" "$work/bin/faultline"
cd "$work"
export PATH=$work/bin:$PATH
# The small grid: 2 x 2 points, 1 replication, 250 s simulated, in 4 shards.
export SHARDS=4 REPLICATIONS=1
export PARAMS="fault.0.servers=40,60 fault.0.duration_s=3,10"
export EXTRA_ARGS="--set 'simulation.duration_s = 250'"

# Waits for every job to leave the queue; prints the states of the jobs named.
wait_for_queue() {
  for _ in $(seq 600); do
    if [[ -z $(squeue --noheader --format=%i) ]]; then return 0; fi
    sleep 0.5
  done
  echo "jobs still queued after 300 s:"; squeue; return 1
}
job_state() { scontrol show job "$1" | grep -o 'JobState=[A-Z_]*' | head -n 1 | cut -d= -f2; }
job_reason() { scontrol show job "$1" | grep -o 'Reason=[A-Za-z_]*' | head -n 1 | cut -d= -f2; }
ids() { grep -o 'array [0-9]*\|merge [0-9]*' | cut -d' ' -f2; }

faultline sweep scenarios/metastability.toml --policy naive --policy retry_budget \
  --param fault.0.servers=40,60 --param fault.0.duration_s=3,10 --replications 1 \
  --set 'simulation.duration_s = 250' --jobs 2 --out single >/dev/null
say "one machine: single/ written"

# 1. As the docs say.
queued=$(examples/slurm/submit.sh)
say "$queued"
read -r array merge < <(ids <<< "$queued" | paste -sd' ')
wait_for_queue
say "array $array: $(for k in 0 1 2 3; do printf '%s ' "$(job_state "${array}_$k")"; done)- merge $merge: $(job_state "$merge")"
[[ $(job_state "$merge") == COMPLETED ]] || { echo "the merge did not complete"; cat faultline-merge-"$merge".log; exit 1; }
diff -r results/metastability-sweep single
say "merged = one machine (diff -r: no difference)"
grep -h "grid point" faultline-sweep-"$array"_*.log | sed 's/^/    /'

# 2. One task cancelled, the merge cancelled with it, the shard rerun alone.
export OUT=results/second-shards MERGED=results/second-sweep
queued=$(examples/slurm/submit.sh --hold)
read -r array merge < <(ids <<< "$queued" | paste -sd' ')
scancel "${array}_2"
scontrol release "$array" "$merge" 2>/dev/null || scontrol release "$array"
wait_for_queue
say "task ${array}_2 cancelled while pending; tasks 0, 1, 3: $(for k in 0 1 3; do printf '%s ' "$(job_state "${array}_$k")"; done)- merge $merge: $(job_state "$merge") ($(job_reason "$merge"))"
[[ $(job_state "$merge") == CANCELLED ]] || { echo "the merge job was not cancelled"; exit 1; }
[[ ! -e results/second-sweep ]] || { echo "a merge ran on an incomplete set"; exit 1; }
queued=$(ARRAY=2 examples/slurm/submit.sh)
say "rerun: $queued"
read -r array merge < <(ids <<< "$queued" | paste -sd' ')
wait_for_queue
say "task ${array}_2: $(job_state "${array}_2"); merge $merge: $(job_state "$merge")"
[[ $(job_state "$merge") == COMPLETED ]] || { echo "the rerun's merge did not complete"; cat faultline-merge-"$merge".log; exit 1; }
diff -r results/second-sweep single
say "rerun of shard 2 merged = one machine (diff -r: no difference)"

# 3. A tune, round by round: arrays with `sbatch --wait`, each followed by the merge.
unset OUT MERGED PARAMS REPLICATIONS EXTRA_ARGS
tune=(scenarios/metastability.toml -p backoff --space policy.backoff.timeout_ms=500..3000:500
  --objective max:auto_completion_ratio --objective min:run_latency_ms.p95 --replications 6
  --set 'simulation.duration_s = 180')
faultline tune "${tune[@]}" --jobs 2 -o single-tune >/dev/null
SHARDS=3 examples/slurm/tune.sh "${tune[@]}" -o results/tune > tune.log
say "tune: $(grep -c 'needs its shards' tune.log) round(s) merged before the last, then: $(grep -o '^wrote [^,]*' tune.log)"
diff -r results/tune single-tune
say "tune on Slurm = one machine (diff -r: no difference)"
