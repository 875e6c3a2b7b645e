#!/usr/bin/env bash
# Takes a fabric down: stops its processes, removes its namespaces, links
# and state. A thin wrapper over `ibfab down`.
#
# Usage: sudo scripts/fabric-down.sh [--name N]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x bin/ibfab ] || make -s build
exec bin/ibfab down "$@"
