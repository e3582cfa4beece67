#!/usr/bin/env bash
# The demo: builds the plugin (frontend + backend into dist/), starts the CloudWatch PromQL
# emulator with a simulated SageMaker fleet on loopback, provisions a data source for it,
# prints the diagnosis of the scenario, and starts Grafana with docker compose where a
# Docker engine runs (otherwise it says how to load dist/ and provisioning/ into a Grafana).
#
#   scripts/demo.sh [scenario]          default kv-saturation; --list to see them all
#   DEMO_PORT=9090 DEMO_HISTORY=6h      emulator port and simulated history
#   DEMO_EXIT=1                         stop after printing the diagnosis (used to check the demo)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:-} -mod=mod" GOWORK=off
scenario="${1:-kv-saturation}"
port="${DEMO_PORT:-9090}"
history="${DEMO_HISTORY:-6h}"
region=us-east-1

if [ "$scenario" = "--list" ]; then
  exec go -C rig run ./cmd/emulator --list-scenarios
fi

echo "== Building the plugin into dist/"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run --silent build
go tool mage -v build:backend
if command -v docker >/dev/null 2>&1 && [ "$(go env GOOS)" != linux ]; then
  # Grafana in Docker runs Linux whatever the host is.
  go tool mage -v build:linux build:linuxARM64
fi
go -C rig build -o ../bin/emulator ./cmd/emulator # the emulator is in the rig module
go build -o bin/diagnose ./cmd/diagnose

# Demo-only credentials: the emulator verifies every signature against them.
access_key="AKIDINFERSCOPEDEMO"
secret_key="$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 32)"
prov=provisioning/datasources/inferscope-demo.yaml

echo "== Starting the emulator: scenario $scenario, $history of history, http://127.0.0.1:$port"
bin/emulator --scenario "$scenario" --addr "127.0.0.1:$port" --history "$history" --region "$region" \
  --access-key "$access_key" --secret-key "$secret_key" --provisioning-out "$prov" >bin/emulator.log 2>&1 &
emulator_pid=$!
cleanup() {
  kill "$emulator_pid" 2>/dev/null || true
  if [ "${compose_up:-0}" = 1 ]; then docker compose down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT INT TERM
for _ in $(seq 1 240); do
  [ -s "$prov" ] && [ "$prov" -nt bin/emulator ] && break
  kill -0 "$emulator_pid" 2>/dev/null || { cat bin/emulator.log; echo "the emulator stopped; see above" >&2; exit 1; }
  sleep 0.5
done
[ -s "$prov" ] || { cat bin/emulator.log; echo "the emulator did not come up in 2 minutes" >&2; exit 1; }
echo "   data source provisioning written to $prov"

echo
echo "== Diagnosis of the last 2h (what Inferscope finds for '$scenario')"
bin/diagnose --url "http://127.0.0.1:$port" --region "$region" --auth-type keys \
  --access-key "$access_key" --secret-key "$secret_key" --since 2h

if [ "${DEMO_EXIT:-0}" = 1 ]; then
  exit 0
fi

echo
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  echo "== Starting Grafana (docker compose)"
  docker compose up -d
  compose_up=1
  echo "   Grafana: http://localhost:3000  (dashboards: Inferscope folder; data source: inferscope-demo)"
else
  cat <<EOT
== No Docker engine here, so Grafana was not started. To use an existing Grafana (11.6+):
   1. copy or link $(pwd)/dist to <grafana plugins dir>/inferscope-sagemaker-datasource
   2. in grafana.ini: [plugins] allow_loading_unsigned_plugins = inferscope-sagemaker-datasource
   3. copy $(pwd)/provisioning/datasources/inferscope-demo.yaml and
      $(pwd)/provisioning/dashboards/ into Grafana's provisioning folder
      (dashboards.yaml there points at the JSON files; adjust its path)
   4. restart Grafana; it must run on this machine (the emulator listens on 127.0.0.1:$port)
EOT
fi
echo
echo "The emulator keeps running until Ctrl-C."
wait "$emulator_pid"
