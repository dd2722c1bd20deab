#!/usr/bin/env bash
# Builds the binary to copy to cluster nodes against an old glibc (default 2.17, EL7's) with
# cargo-zigbuild and zig from PyPI, then checks the floor from the binary's versioned symbols:
# the newest GLIBC_x.y it needs must not be newer than the target. Prints the binary's path.
#   scripts/glibc-floor.sh [GLIBC_VERSION]
# Needs: pip install ziglang; cargo install cargo-zigbuild (done here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
floor=${1:-2.17}
# Exit 77 when the tools cannot be installed (no registry): nothing was checked.
if ! python3 -m ziglang version >/dev/null 2>&1 && ! pip install --quiet ziglang >&2; then
  echo "cannot install zig (pip install ziglang)" >&2
  exit 77
fi
if ! command -v cargo-zigbuild >/dev/null && ! cargo install --quiet --locked cargo-zigbuild >&2; then
  echo "cannot install cargo-zigbuild" >&2
  exit 77
fi
cargo zigbuild --release --target "x86_64-unknown-linux-gnu.$floor" >&2
binary=target/x86_64-unknown-linux-gnu/release/faultline
needed=$(objdump -T "$binary" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
if [[ $(printf '%s\n%s\n' "$needed" "$floor" | sort -V | tail -n 1) != "$floor" ]]; then
  echo "error: $binary needs GLIBC_$needed, newer than the floor $floor" >&2
  exit 1
fi
echo "$binary: needs GLIBC_$needed at most (floor $floor)" >&2
echo "$binary"
