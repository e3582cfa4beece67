#!/usr/bin/env bash
# Runs everything CI runs: Go vet and tests of both Go modules (the plugin; rig/: emulator,
# simulated fleet and the integration tests against them),
# a short fuzz of every Go fuzz target, the frontend's typecheck, lint, tests and build,
# the compatibility of the frontend with the oldest and newest Grafana APIs (levitate), the
# editors in headless Chromium (scripts/browser-test.sh, when /usr/bin/chromium exists),
# and the release package check. Usage: scripts/test.sh   (FUZZTIME=10s to fuzz longer;
# INFERSCOPE_LONG=1 runs the rig's long sweeps in full, as CI does; unset, a daily sample: docs/testing.md)
set -euo pipefail
cd "$(dirname "$0")/.."
# Two modules: the plugin (root) and the test rig (rig/: emulator, simulated fleet, the
# integration tests). Each is built on its own, as CI on a clean clone does, and from its
# committed go.mod (the default -mod=readonly), so no run modifies tracked files.
export GOWORK=off
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
# The frontend runs on the Node LTS of .nvmrc (fetched from the npm registry if this machine's
# Node is older; SYSTEM_NODE=1 keeps the machine's).
source scripts/node.sh

# Each stage's wall time and CPU time (this shell's children, user + system), so the log says
# where CI's time goes; printed as a table before the summary.
cpu_seconds() {
  times >"$logdir/times"
  awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { f = $i; sub(/s$/, "", f); split(f, p, "m"); t += p[1] * 60 + p[2] } printf "%.1f", t }' "$logdir/times"
}
stage_end() {
  [ -n "${stage_name:-}" ] || return 0
  local cpu
  cpu_seconds >"$logdir/cpu"
  cpu=$(awk -v a="$stage_cpu" '{ printf "%.0f", $1 - a }' "$logdir/cpu")
  printf '%-44s %6d %6d\n' "$stage_name" $((SECONDS - stage_start)) "$cpu" >>"$logdir/timings"
}
stage() {
  stage_end
  stage_name=$* stage_start=$SECONDS
  cpu_seconds >"$logdir/cpu"
  stage_cpu=$(cat "$logdir/cpu")
  printf '\n== %s\n' "$*"
}
# Named explicitly: ./... would also walk node_modules, where some npm packages ship Go files.
go_pkgs=(./pkg/... ./cmd/... ./dashboards/... ./internal/... ./scripts/...)

stage "Go modules tidy (both modules)"
# A go.mod that is not tidy fails here with the diff, instead of being rewritten by a build.
go mod tidy -diff
go -C rig mod tidy -diff

stage "Go vet (plugin module, then rig module)"
go vet "${go_pkgs[@]}"
go -C rig vet ./...

stage "Go security scan (gosec, validator's rules)"
# The catalog review runs gosec's HIGH-severity rules over the whole source tree, rig/ included;
# a false positive keeps `// #nosec <rule> -- <reason>` on its line. Pinned, from the Go proxy.
go run github.com/securego/gosec/v2/cmd/gosec@v2.30.0 -quiet -severity high \
  -exclude-dir=node_modules -exclude-dir=.cache -r ./...

stage "Go tests (plugin module, then rig module)"
go build -o "$logdir/testsummary" ./scripts/testsummary
# Both modules' events go through one summary; either module failing fails the stage.
{
  root=0 rig=0
  go test -json -count=1 "${go_pkgs[@]}" || root=$?
  # CI (CI=true) sets INFERSCOPE_LONG=1: the full sweeps (scorecards, time to name on every
  # fleet shape, 2 h of a churning 200-instance fleet); a developer's run plays a daily sample.
  # Not INFERSCOPE_DELAYS=all: the time-to-page grid at every arrival delay (docs/testing.md).
  long=${INFERSCOPE_LONG:-}
  [ -n "$long" ] || { [ "${CI:-}" = true ] && long=1 || long=0; }
  INFERSCOPE_LONG=$long go -C rig test -json -count=1 ./... || rig=$?
  exit $((root | rig))
} | "$logdir/testsummary" | tee "$logdir/go.txt"

stage "Go fuzz (${FUZZTIME:-5s} per target)"
scripts/fuzz.sh

stage "Frontend install (Node $(node --version))"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
stage "Frontend typecheck"
npm run --silent typecheck
stage "Frontend lint"
npm run --silent lint
stage "Frontend tests"
npm test -- --json --outputFile="$logdir/jest.json"
stage "Frontend build"
npm run --silent build

# What module.ts imports from @grafana/data, ui and runtime, compared by levitate between the
# installed versions and (a) the oldest Grafana that plugin.json's grafanaDependency admits,
# (b) the newest published; a removed or changed export we use fails the stage. Levitate
# fetches those versions' tarballs from the npm registry (about 90 MB unpacked, into $logdir).
stage "Grafana API compatibility (levitate)"
levitate_version=0.17.2 # pinned so a levitate release cannot change CI's verdict unannounced
min=$(node -p 'require("./src/plugin.json").dependencies.grafanaDependency.match(/\d+\.\d+\.\d+/)?.[0] ?? ""')
if [ -z "$min" ]; then
  echo "src/plugin.json dependencies.grafanaDependency names no version x.y.z (e.g. \">=11.6.0\"): write the oldest Grafana supported"
  exit 1
fi
newest=$(npm view @grafana/data version)
targets=""
for v in "$min" "$newest"; do
  for p in data ui runtime; do targets+="${targets:+,}@grafana/$p@$v"; done
done
echo "oldest supported Grafana $min (plugin.json), newest published $newest"
mkdir "$logdir/levitate"
# LEVITATE_CACHE keeps the installed versions' tarballs for the second target.
TMPDIR="$logdir/levitate" LEVITATE_CACHE=1 npx --yes "@grafana/levitate@$levitate_version" \
  is-compatible --markdown --path src/module.ts --target "$targets" 2>&1 | tee "$logdir/levitate.txt"
# A package levitate cannot fetch or read is one line in its output, and it still exits 0.
if grep -E 'Could not process the package|Skipping package' "$logdir/levitate.txt"; then
  echo "levitate did not compare every package above: see its messages"
  exit 1
fi

# The editors in headless Chromium against the plugin binary and the emulator; .ci/run
# installs Debian's chromium, a developer without it gets a notice instead.
stage "Browser tests (headless Chromium)"
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  scripts/browser-test.sh | tee "$logdir/browser.txt"
else
  echo "skipped: no ${CHROMIUM:-/usr/bin/chromium} (apt-get install chromium to run them)"
fi

stage "Backend build and release package check"
go tool mage -v build:backend
go run ./cmd/release check --dist dist

stage_end
echo
printf '%-44s %6s %6s\n' "stage" "wall s" "CPU s"
cat "$logdir/timings"

go_line=$(grep -E '^go tests: ' "$logdir/go.txt" | tail -1)
js_counts=$(node -e 'const r=require(process.argv[1]);console.log(r.numPassedTests+" "+r.numFailedTests)' "$logdir/jest.json")
read -r go_pass go_fail < <(sed -E 's/^go tests: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/' <<<"$go_line")
read -r js_pass js_fail <<<"$js_counts"
br_pass=0 br_fail=0 # stays 0 when the browser tests were skipped
if [ -f "$logdir/browser.txt" ]; then
  read -r br_pass br_fail < <(sed -nE 's/^browser: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$logdir/browser.txt")
fi
echo
echo "go: $go_pass passed, $go_fail failed; frontend: $js_pass passed, $js_fail failed; browser: $br_pass passed, $br_fail failed"
echo "tests: $((go_pass + js_pass + br_pass)) passed, $((go_fail + js_fail + br_fail)) failed"
