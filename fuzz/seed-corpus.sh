#!/usr/bin/env bash
# Seeds the fuzzers' corpora: fuzz/corpus/scenario/ with the shipped scenarios and every TOML
# example in the docs; fuzz/corpus/readers/ with a real shard file, one of its point records
# and its sweep key, each behind the byte that selects its reader (0 shard, 1 point, 2 key);
# fuzz/corpus/otlp/ with runs of the OpenTelemetry Python SDK's traces and a faultline export;
# fuzz/corpus/prometheus/ with a client library's scrape; fuzz/corpus/tune_readers/ with a real
# tune shard (behind 0) and checkpoint (behind 1).
# Run from anywhere; it builds the debug binary to make the shard.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p fuzz/corpus/scenario fuzz/corpus/readers fuzz/corpus/otlp fuzz/corpus/prometheus fuzz/corpus/tune_readers
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
head -n 1 tests/data/otel-python-traces.jsonl > fuzz/corpus/otlp/python-1
head -n 5 tests/data/otel-python-traces.jsonl > fuzz/corpus/otlp/python-5
target/debug/faultline run tests/data/calibrate-roundtrip.toml -p retrying --traces 3 --replications 1 \
  --set simulation.duration_s=120 --set simulation.warmup_s=0 --out "$scratch/run" >/dev/null
cp "$scratch/run/retrying/traces.otlp.jsonl" fuzz/corpus/otlp/faultline-export
# A client library's scrape: two series of one callee with the same buckets, one with others.
cat > fuzz/corpus/prometheus/scrape <<'PROM'
# HELP http_client_request_duration_seconds Duration of HTTP client requests.
# TYPE http_client_request_duration_seconds histogram
http_client_request_duration_seconds_bucket{server_address="db",status="200",le="0.01"} 300
http_client_request_duration_seconds_bucket{server_address="db",status="200",le="0.05"} 900
http_client_request_duration_seconds_bucket{server_address="db",status="200",le="+Inf"} 1000
http_client_request_duration_seconds_sum{server_address="db",status="200"} 21.5
http_client_request_duration_seconds_count{server_address="db",status="200"} 1000
http_client_request_duration_seconds_bucket{server_address="db",status="500",le="0.01"} 10
http_client_request_duration_seconds_bucket{server_address="db",status="500",le="0.05"} 90
http_client_request_duration_seconds_bucket{server_address="db",status="500",le="+Inf"} 100
http_client_request_duration_seconds_bucket{server_address="db",status="429",le="0.02"} 20
http_client_request_duration_seconds_bucket{server_address="db",status="429",le="0.1"} 45
http_client_request_duration_seconds_bucket{server_address="db",status="429",le="+Inf"} 50 1700000000000
gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model="gpt-4o",le="1"} 5
gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model="gpt-4o",le="+Inf"} 7
PROM
tune() {
  target/debug/faultline tune scenarios/mmc.toml -p plain --space dependency.station.servers=10..13 \
    --objective max:auto_completion_ratio --objective min:run_latency_ms.p95 --replications 4 \
    --initial-replications 2 --set simulation.duration_s=20 --set simulation.warmup_s=0 -o "$scratch/tuned" "$@" >/dev/null
}
tune --shard 0/2
tune --shard 1/2
{ printf '\x00'; cat "$scratch/.tuned.faultline-checkpoint/round-1-shard-0-of-2.json"; } > fuzz/corpus/tune_readers/shard
tune --merge-shards
{ printf '\x01'; cat "$scratch/.tuned.faultline-checkpoint/tune.json"; } > fuzz/corpus/tune_readers/checkpoint
for t in scenario readers otlp prometheus tune_readers; do echo "seeded $t: $(ls fuzz/corpus/$t | wc -l) inputs"; done
