#!/usr/bin/env bash
# Runs every native Go fuzz target in the module for the given time each.
# Usage: scripts/fuzz.sh [DURATION]   (default 60s)
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-60s}
status=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "== $pkg $target ($dur)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$dur" "$pkg" || status=1
	done
done
exit $status
