#!/usr/bin/env bash
# The demo: builds the plugin (frontend + backend into dist/), starts the CloudWatch PromQL
# emulator with a simulated SageMaker fleet on loopback, provisions a data source for it,
# prints the diagnosis of the scenario, and starts Grafana with docker compose where a
# Docker engine runs (otherwise it says how to load dist/ and provisioning/ into a Grafana).
#
#   scripts/demo.sh [scenario]          default kv-saturation; --list to see them all
#   DEMO_PORT=9090 DEMO_HISTORY=6h      emulator port and simulated history
#   DEMO_EXIT=1                         stop after printing the diagnosis (used to check the demo)
# Long steps print their name and the elapsed time every 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off
scenario="${1:-kv-saturation}"
port="${DEMO_PORT:-9090}"
history="${DEMO_HISTORY:-6h}"
region=us-east-1

if [ "$scenario" = "--list" ]; then
  exec go -C rig run ./cmd/emulator --list-scenarios
fi

started=$SECONDS # bash counts it on, in subshells too
emulator_pid= ticker_pid=
cleanup() {
  if [ -n "$ticker_pid" ]; then kill -KILL "$ticker_pid" 2>/dev/null || true; fi
  if [ -n "$emulator_pid" ]; then kill "$emulator_pid" 2>/dev/null || true; fi
  if [ "${compose_up:-0}" = 1 ]; then docker compose down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT INT TERM

# step LABEL CMD...: runs CMD and, while it runs, prints LABEL and the time it has taken
# every 10 s: building the Go binaries takes minutes on a busy machine and prints nothing.
step() {
  local label=$1 t0 rc=0
  shift
  t0=$SECONDS
  echo "   $label"
  # sleep's output goes nowhere, so a sleep outliving the ticker holds no pipe open.
  (while sleep 10 >/dev/null 2>&1; do echo "   ... $label: $((SECONDS - t0)) s"; done) &
  ticker_pid=$!
  "$@" || rc=$?
  # KILL, not TERM: a just-forked ticker may still hold this script's traps, and TERM would
  # run cleanup (and stop the emulator) in it. wait keeps bash's "Killed" notice quiet.
  kill -KILL "$ticker_pid" 2>/dev/null || true
  wait "$ticker_pid" 2>/dev/null || true
  ticker_pid=
  [ "$rc" = 0 ] && echo "   $label: done in $((SECONDS - t0)) s"
  return "$rc"
}

echo "== Building the plugin into dist/"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  step "installing the npm packages" npm ci --no-audit --no-fund
fi
step "building the frontend" npm run --silent build
step "building the backend" go tool mage -v build:backend
if command -v docker >/dev/null 2>&1 && [ "$(go env GOOS)" != linux ]; then
  # Grafana in Docker runs Linux whatever the host is.
  step "building the backend for Grafana's Linux container" go tool mage -v build:linux build:linuxARM64
fi
step "building the emulator" go -C rig build -o ../bin/emulator ./cmd/emulator # the emulator is in the rig module
step "building the diagnose command" go build -o bin/diagnose ./cmd/diagnose

# Demo-only credentials: the emulator verifies every signature against them.
access_key="AKIDINFERSCOPEDEMO"
secret_key="$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 32)"
prov=provisioning/datasources/inferscope-demo.yaml

echo "== Starting the emulator: scenario $scenario, $history of history, http://127.0.0.1:$port"
bin/emulator --scenario "$scenario" --addr "127.0.0.1:$port" --history "$history" --region "$region" \
  --access-key "$access_key" --secret-key "$secret_key" --provisioning-out "$prov" >bin/emulator.log 2>&1 &
emulator_pid=$!
# The emulator writes the provisioning once its history is backfilled and the API is up.
emulator_up() {
  for _ in $(seq 1 240); do
    if [ -s "$prov" ] && [ "$prov" -nt bin/emulator ]; then return 0; fi
    if ! kill -0 "$emulator_pid" 2>/dev/null; then
      cat bin/emulator.log
      echo "the emulator stopped; see above" >&2
      return 1
    fi
    sleep 0.5
  done
  cat bin/emulator.log
  echo "the emulator did not come up in 2 minutes" >&2
  return 1
}
step "backfilling $history of history" emulator_up
# The emulator keeps the file private (it holds the key pair); these are demo-only keys for a
# loopback emulator, and Grafana reads the file as its own user (472 in Docker).
chmod 0644 "$prov"
chmod -R a+rX provisioning
echo "   data source provisioning written to $prov"

echo
echo "== Diagnosis of the last 2h (what Inferscope finds for '$scenario')"
bin/diagnose --url "http://127.0.0.1:$port" --region "$region" --auth-type keys \
  --access-key "$access_key" --secret-key "$secret_key" --since 2h
echo "   first diagnosis $((SECONDS - started)) s after the demo started"

if [ "${DEMO_EXIT:-0}" = 1 ]; then
  exit 0
fi

echo
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  echo "== Starting Grafana (docker compose)"
  docker compose up -d
  compose_up=1
  echo "   Grafana: http://localhost:3000  (dashboards and alert rules: folder Inferscope; data source: SageMaker (local emulator))"
else
  cat <<EOT
== No Docker engine here, so Grafana was not started. To use an existing Grafana (11.6+):
   1. copy or link $(pwd)/dist to <grafana plugins dir>/inferscope-sagemaker-datasource
   2. in grafana.ini: [plugins] allow_loading_unsigned_plugins = inferscope-sagemaker-datasource
   3. copy into Grafana's provisioning folder, readable by Grafana's user (files 0644,
      folders 0755; cp -r keeps these modes):
        $(pwd)/provisioning/datasources/inferscope-demo.yaml  to  datasources/
        $(pwd)/provisioning/dashboards/                       to  dashboards/
           (dashboards.yaml there points at the JSON files; adjust its path)
        $(pwd)/provisioning/alerting/inferscope-rules.yaml    to  alerting/
           (the alert rules; they query the data source inferscope-demo.yaml provisions)
   4. restart Grafana; it must run on this machine (the emulator listens on 127.0.0.1:$port)
EOT
fi
echo
echo "The emulator keeps running until Ctrl-C."
wait "$emulator_pid"
