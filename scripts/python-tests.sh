#!/usr/bin/env bash
# The Python package's tests (docs/python.md), the second half of README's test command.
# Installs the package from this repository with pip into a virtual environment
# (target/python-venv, or FAULTLINE_PYTHON_VENV), as a user would (`pip install .`: maturin
# builds the native module in release), builds the binary the tests compare with, and runs
# pytest on python/tests (which also runs docs/python.md's examples).
#
# Where Python, a virtual environment or PyPI cannot be used, it says so loudly and exits 0,
# unless FAULTLINE_REQUIRE_PYTHON=1 (CI sets it when it could reach PyPI): then it fails.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  echo "*** WARNING: $1: the Python package's tests are NOT RUN ***" >&2
  if [[ ${FAULTLINE_REQUIRE_PYTHON:-} == 1 ]]; then
    exit 1
  fi
  exit 0
}

python=${PYTHON:-python3}
venv=${FAULTLINE_PYTHON_VENV:-${CARGO_TARGET_DIR:-target}/python-venv}
command -v "$python" >/dev/null || skip "no $python"
[[ -x $venv/bin/python ]] || "$python" -m venv "$venv" >/dev/null || skip "cannot make a virtual environment with $python -m venv"
# The venv's tools first (maturin, run by pip's build hook without build isolation), by an
# absolute path, since the tests run from python/tests.
venv=$(cd "$venv" && pwd)
export PATH="$venv/bin:$PATH"
"$venv/bin/python" -m pip install --quiet 'maturin>=1.9.4,<2' 'pandas>=1.3' 'pytest>=7' tqdm matplotlib 'prometheus_client>=0.20' ||
  skip "cannot install maturin, pandas, pytest, tqdm, matplotlib and prometheus_client from PyPI"

# From here on a failure is a failure: the package must build and its tests pass.
# FAULTLINE_BUILD_LOCK: a file every build on a shared machine takes in turn (`flock`), for
# the binary's build and the package's (pip runs cargo through maturin); the tests run
# without it. Unset (CI), nothing is locked.
locked=()
if [[ -n ${FAULTLINE_BUILD_LOCK:-} ]]; then
  locked=(flock "$FAULTLINE_BUILD_LOCK")
fi
${locked[@]+"${locked[@]}"} cargo build --quiet --bin faultline
started=$(date +%s)
${locked[@]+"${locked[@]}"} "$venv/bin/python" -m pip install --quiet --no-build-isolation --force-reinstall --no-deps .
echo "pip install . took $(($(date +%s) - started)) s" >&2
# Absolute: the tests run from python/tests.
FAULTLINE_BIN=$(realpath "${FAULTLINE_BIN:-${CARGO_TARGET_DIR:-target}/debug/faultline}")
export FAULTLINE_BIN
root=$(pwd)
# Run from outside the repository, so `import faultline` is the installed package.
(cd python/tests && MPLBACKEND=Agg "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" .)
# The docstrings' examples (help() shows them), run on the installed package from the
# repository's root, since they name scenarios/ and tests/data/ files.
doctests() {
  MPLBACKEND=Agg "$venv/bin/python" -m pytest -q -p no:cacheprovider --doctest-modules --pyargs faultline
}
doctests

# The wheel a release ships: abi3, tagged manylinux2014 (glibc 2.17, checked by maturin's
# auditwheel), linked with zig from PyPI. Installed over the package above; the same-bytes
# tests and the docstrings run again on it. Where zig cannot be installed, say so; with
# FAULTLINE_REQUIRE_PYTHON=1 that is a failure.
if ! "$venv/bin/python" -m pip install --quiet ziglang; then
  echo "*** WARNING: cannot install ziglang from PyPI: the manylinux2014 wheel is NOT BUILT ***" >&2
  [[ ${FAULTLINE_REQUIRE_PYTHON:-} == 1 ]] && exit 1
  exit 0
fi
wheels=${CARGO_TARGET_DIR:-target}/wheels
[[ $wheels == /* ]] || wheels=$root/$wheels
rm -rf "$wheels"
${locked[@]+"${locked[@]}"} "$venv/bin/maturin" build --quiet --release --zig --compatibility manylinux2014 \
  --auditwheel check --out "$wheels"
wheel=$(ls "$wheels"/faultline-*-cp39-abi3-manylinux*_x86_64*.whl)
echo "wheel: $(basename "$wheel"), $(($(stat -c %s "$wheel") / 1024)) KiB" >&2
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
(cd python/tests && MPLBACKEND=Agg "$venv/bin/python" -m pytest -q -p no:cacheprovider test_same_bytes.py)
doctests
