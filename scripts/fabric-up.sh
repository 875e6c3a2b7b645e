#!/usr/bin/env bash
# Brings a fabric up: namespaces, veth links and one process per node, and
# waits until every link has trained. A thin wrapper over `ibfab up` for
# those who prefer a script; the arguments are ibfab up's.
#
# Usage: sudo scripts/fabric-up.sh [-f TOPO] [--name N] [--time-scale S]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x bin/ibfab ] && [ -x bin/ibswitch ] && [ -x bin/ibhca ] || make -s build
exec bin/ibfab up "$@"
