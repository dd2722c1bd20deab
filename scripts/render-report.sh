#!/usr/bin/env bash
# Renders a report.html to a PNG with headless Chromium (Debian package `chromium`), so a report
# can be shown where HTML cannot, such as README.
#   scripts/render-report.sh results/meeting-analysis-incident/report.html docs/report.png [WIDTH HEIGHT]
set -euo pipefail
report=${1:?report.html to render}
png=${2:?PNG to write}
width=${3:-1500}
height=${4:-3400}
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z "$chromium" ]]; then
  echo "no Chromium found; on Debian: apt-get install chromium" >&2
  exit 1
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# The flags keep Chromium off the network: the report needs none, and a closed machine refuses it.
"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size="$width,$height" \
  --screenshot="$(realpath -m "$png")" "file://$(realpath "$report")" 2>/dev/null
echo "wrote $png"
