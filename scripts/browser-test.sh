#!/usr/bin/env bash
# Runs the editors in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core)
# with the real Grafana packages, against the real plugin binary and the emulator: builds the
# plugin and rig/cmd/pluginhost, bundles e2e/page, starts the host on loopback and runs
# e2e/*.test.mjs with node's test runner. Screenshots of every editor state, and the host's
# and plugin's log, go to test-results/browser/ (E2E_SCREENSHOTS to change it).
# Usage: scripts/browser-test.sh [node --test args]   (CHROMIUM=/path/to/chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off
source scripts/node.sh
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  echo "browser tests: no Chromium at $CHROMIUM; install Debian's: apt-get install chromium" >&2
  exit 1
fi
export E2E_SCREENSHOTS="${E2E_SCREENSHOTS:-test-results/browser}"
rm -rf "$E2E_SCREENSHOTS"
mkdir -p "$E2E_SCREENSHOTS"
work=$(mktemp -d)
host_pid=
cleanup() {
  if [ -n "$host_pid" ]; then
    kill "$host_pid" 2>/dev/null || true
    wait "$host_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/gpx_inferscope_sagemaker" ./pkg
go -C rig build -o "$work/pluginhost" ./cmd/pluginhost
node e2e/build.mjs
"$work/pluginhost" --plugin "$work/gpx_inferscope_sagemaker" --page e2e/dist --generated-instances 5000 \
  >"$work/host.out" 2>"$E2E_SCREENSHOTS/host.log" &
host_pid=$!
# The host prints its address once the emulator's history is backfilled and the plugin is up.
url=
for _ in $(seq 1 240); do
  url=$(sed -n 's/^pluginhost: serving //p' "$work/host.out")
  [ -n "$url" ] && break
  if ! kill -0 "$host_pid" 2>/dev/null; then
    echo "browser tests: the plugin host exited:" >&2
    cat "$E2E_SCREENSHOTS/host.log" >&2
    exit 1
  fi
  sleep 0.5
done
if [ -z "$url" ]; then
  echo "browser tests: the plugin host did not come up in 120s" >&2
  exit 1
fi
export E2E_HOST_URL="$url"
# e2e/tags.test.mjs starts a host of its own on a tagged fleet with these.
export E2E_PLUGIN="$work/gpx_inferscope_sagemaker" E2E_PLUGINHOST="$work/pluginhost"
# One test file at a time: each has its own Chromium, and the machine has 2 cores.
status=0
node --test --test-concurrency=1 "$@" e2e/ | tee "$work/node.txt" || status=$?
pass=$(sed -n 's/^ℹ pass //p' "$work/node.txt")
fail=$(sed -n 's/^ℹ fail //p' "$work/node.txt")
echo "browser: ${pass:-0} passed, ${fail:-0} failed; screenshots in $E2E_SCREENSHOTS/"
exit "$status"
