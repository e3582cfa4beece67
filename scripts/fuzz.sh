#!/usr/bin/env bash
# Fuzzes every Go fuzz target (each `func FuzzX` in a _test.go file) for FUZZTIME (default 5s).
# New targets join automatically. Committed seed corpora live in each package's testdata/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(' pkg cmd dashboards scripts 2>/dev/null |
  while read -r file; do
    for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
      echo "fuzz $name ./$(dirname "$file")"
      go test -run='^$' -fuzz="^${name}\$" -fuzztime="${FUZZTIME:-5s}" "./$(dirname "$file")" >"$log" 2>&1 ||
        { cat "$log"; exit 1; }
    done
  done
