#!/usr/bin/env bash
# Regenerates the catalog's screenshots (src/img/screenshots/, listed in plugin.json
# info.screenshots) from a browser test run: the dashboards and editors the tests assert on,
# so every picture is of a state a test checked, drawn from the real plugin's answers.
# Usage: scripts/screenshots.sh   (needs what scripts/browser-test.sh needs: Chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
shots=test-results/browser
E2E_SCREENSHOTS=$shots scripts/browser-test.sh --test-name-pattern '^(dashboard |code editor|builder|config editor)'
out=src/img/screenshots
rm -rf "$out"
mkdir -p "$out"
# test screenshot → catalog file; plugin.json names each of these.
while read -r from to; do
  cp "$shots/$from.png" "$out/$to.png"
done <<'LIST'
dashboard-performance-top performance-dashboard
dashboard-capacity-top capacity-dashboard
dashboard-reliability-top reliability-dashboard
query-1-label-completion query-editor-completion
builder-2-filter-and-sum query-builder
config-2-save-and-test-ok config-editor
LIST
du -b "$out"/*.png
