#!/usr/bin/env bash
# Seeds the fuzzers' corpora: fuzz/corpus/scenario/ with the shipped scenarios and every TOML
# example in the docs; fuzz/corpus/readers/ with a real shard file, one of its point records
# and its sweep key, each behind the byte that selects its reader (0 shard, 1 point, 2 key).
# Run from anywhere; it builds the debug binary to make the shard.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p fuzz/corpus/scenario fuzz/corpus/readers
cp scenarios/*.toml fuzz/corpus/scenario/
for doc in README.md docs/*.md; do
  awk -v prefix="fuzz/corpus/scenario/$(basename "$doc" .md)" '
    /^ *```toml/ { n++; inside = 1; next }
    inside && /^ *```/ { inside = 0; next }
    inside { print > (prefix "-" n ".toml") }
  ' "$doc"
done
cargo build --quiet
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
target/debug/faultline sweep scenarios/mmc.toml --param dependency.station.servers=10,11,12 \
  --replications 2 --set simulation.duration_s=20 --set simulation.warmup_s=0 --shard 0/2 --out "$scratch/sweep" >/dev/null
shard="$scratch/sweep/shard-0-of-2.jsonl"
{ printf '\x00'; cat "$shard"; } > fuzz/corpus/readers/shard
{ printf '\x01'; sed -n 2p "$shard" | tr -d '\n'; } > fuzz/corpus/readers/point
{ printf '\x02'; head -n 1 "$shard" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["key"]))'; } > fuzz/corpus/readers/key
echo "seeded: $(ls fuzz/corpus/scenario | wc -l) scenario inputs, $(ls fuzz/corpus/readers | wc -l) reader inputs"
