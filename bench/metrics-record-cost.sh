#!/usr/bin/env bash
# Instructions per request spent recording metrics: bench/metrics_record_cost.swift, compiled with -O
# against the release build of RelayMetrics, run under callgrind collecting only `recordExchange`
# (one countRequest with a duration plus one recordUpstream, as ProxyWorker.record makes them).
#
#   bench/metrics-record-cost.sh [rounds]   (default 10000)
#
# Instruction counts do not depend on other load on the machine. Needs: valgrind, a Swift toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-10000}
command -v valgrind >/dev/null || { echo "missing valgrind: apt-get install valgrind" >&2; exit 2; }
swift build -c release --target RelayMetrics >/dev/null
R=.build/release
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
# Every module RelayMetrics links, and their objects.
MODULES="RelayMetrics Prometheus Atomics _AtomicsShims CoreMetrics Locking"
OBJECTS=()
shopt -s nullglob
for m in $MODULES; do OBJECTS+=($R/$m.build/*.o $R/$m.build/src/*.o); done
swiftc -O -I $R/Modules -Xcc -I -Xcc .build/checkouts/swift-atomics/Sources/_AtomicsShims/include \
    bench/metrics_record_cost.swift "${OBJECTS[@]}" -o $W/driver
# Valgrind 3.19 cannot read the toolchain's DWARF; the symbol table is enough to find the function.
strip --strip-debug $W/driver
run() { # rounds -> instructions collected
    valgrind --tool=callgrind --callgrind-out-file=$W/out --toggle-collect='*recordExchange*' $W/driver $1 >/dev/null 2>$W/log
    callgrind_annotate $W/out | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}
# The difference of two runs leaves out the once-only costs (the route's first series, the first record).
FEW=$(run 100); MANY=$(run $((ROUNDS + 100)))
echo "instructions per request (countRequest + recordUpstream): $(( (MANY - FEW) / ROUNDS ))"
