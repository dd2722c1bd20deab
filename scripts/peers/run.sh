#!/usr/bin/env bash
# Runs faultline, SimPy and Ciw on the same models (scripts/peers/models.py), checks that the
# peers' figures agree with faultline's within their confidence intervals, and prints the
# throughput ratios of this one run (README, Speed). Exit 1 when a figure disagrees.
#
#   scripts/peers/run.sh [--scale X] [--replications N] [--models mmc4,mmc10,tandem,nested] [--json FILE]
#
# FAULTLINE_BIN: the faultline binary (default: builds target/release/faultline).
# FAULTLINE_PEERS_VENV: where the pinned Python environment lives (default: target/peers-venv).
# PYTHON: the interpreter that makes it (default: python3, 3.9 or later).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${FAULTLINE_PEERS_VENV:-$root/target/peers-venv}"
stamp="$venv/.requirements"

if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/requirements.txt" "$stamp"; then
  echo "# making the pinned environment in $venv" >&2
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$stamp"
fi

bin="${FAULTLINE_BIN:-}"
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --release --quiet)
  bin="$root/target/release/faultline"
fi

exec "$venv/bin/python" "$here/compare.py" --faultline "$bin" "$@"
