#!/usr/bin/env bash
# CPU per request of a DPoP route against a Bearer route, same relay binary, same job: proxy to one
# nginx upstream on loopback and inject an identity's token (bench/token_issuer.py, 1 h tokens). The
# DPoP relay's identity has `"dpop": true` and the issuer answers token_type DPoP, so every
# forwarded request carries `Authorization: DPoP` and a fresh ES256 proof signed on the worker.
#
#   bench/dpop-cpu.sh [seconds] [connections] [rounds]   (defaults: 5 s, 64 connections, 5 rounds)
#
# Per round and relay: wrk -t1 -c$C -d$Ds; CPU = utime+stime of the relay process (all threads,
# /proc/PID/stat) over the run, divided by the requests wrk completed. The two relays alternate,
# in a rotated order each round; medians and the spread (min-max) are printed, and the ratio of the
# medians, and the requests per second one core serves (1e6 / the median CPU µs per request: what a
# worker sustains when CPU is the limit, for sizing). The machine may be shared: read the spread
# before the ratio. A default run takes about a minute (2 relays × 5 rounds × 5 s, and start-up).
# Needs: wrk nginx python3 curl (scripts/install-deps --test) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-5}; C=${2:-64}; ROUNDS=${3:-5}
RELAY=${OAUTH_RELAY_BIN:-.build/release/oauth-relay}
WORKERS=${WORKERS:-1}
for t in wrk nginx python3 curl; do command -v $t >/dev/null || { echo "missing $t: scripts/install-deps --test" >&2; exit 2; }; done
[ -x "$RELAY" ] || { echo "missing $RELAY: swift build -c release" >&2; exit 2; }
UP=19201; IDP=19202; BEARER=19203; DPOP=19204
W=$(mktemp -d); PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; return 1; }

cat >$W/up.conf <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP; location / { return 200 "hello from upstream\n"; }
    location = /api/check { return 200 "\$http_authorization \$http_dpop"; } } }
NG
nginx -c $W/up.conf & PIDS+=($!)
python3 bench/token_issuer.py $IDP & PIDS+=($!)
wait_port $UP; wait_port $IDP
relay_config() { # port type dpop
  cat <<JS
{ "listen": "127.0.0.1:$1", "admin": null, "workers": $WORKERS, "accessLog": false,
  "identities": { "bench": { "tokenUrl": "http://127.0.0.1:$IDP/token?type=$2", "clientId": "bench",
                             "clientSecret": "bench-secret", "dpop": $3 } },
  "routes": [ { "match": { "pathPrefix": "/" }, "upstream": "http://127.0.0.1:$UP/api", "identity": "bench" } ] }
JS
}
relay_config $BEARER Bearer false >$W/bearer.json
relay_config $DPOP DPoP true >$W/dpop.json
"$RELAY" run --config $W/bearer.json --log-level warning 2>$W/bearer.err & BEARER_PID=$!; PIDS+=($BEARER_PID)
"$RELAY" run --config $W/dpop.json --log-level warning 2>$W/dpop.err & DPOP_PID=$!; PIDS+=($DPOP_PID)
wait_port $BEARER; wait_port $DPOP
# What each relay sends (nginx echoes Authorization and DPoP on /api/check): Bearer without a proof,
# and DPoP with a compact JWS.
curl -fsS "http://127.0.0.1:$BEARER/check" | grep -Eq '^Bearer bench-[^ ]+ $' || { echo "the Bearer relay sends something else" >&2; exit 1; }
curl -fsS "http://127.0.0.1:$DPOP/check" | grep -Eq '^DPoP bench-[^ ]+ ey[^.]+\.[^.]+\.[^.]+$' || { echo "the DPoP relay sends no proof" >&2; exit 1; }
for port in $BEARER $DPOP; do wrk -t1 -c4 -d1s "http://127.0.0.1:$port/" >/dev/null; done  # warm-up

. bench/cpu-round.sh
declare -A PID=([bearer]=$BEARER_PID [dpop]=$DPOP_PID) PORT=([bearer]=$BEARER [dpop]=$DPOP)
order=(bearer dpop)
echo "oauth-relay DPoP vs Bearer: ${D}s runs, $C connections, $ROUNDS rounds, wrk -t1, relay workers $WORKERS, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  for name in "${order[@]}"; do
    cpu_round "$round" "$name" "${PID[$name]}" -t1 -c"$C" -d"${D}s" "http://127.0.0.1:${PORT[$name]}/x"
  done
  order=("${order[1]}" "${order[0]}")
done
python3 - $W <<'PY'
import statistics, sys
rows = {name: [tuple(map(float, line.split())) for line in open(f"{sys.argv[1]}/{name}.txt")] for name in ("bearer", "dpop")}
med = {}
for name, values in rows.items():
    cpu = [v[0] for v in values]; rps = [v[1] for v in values]; user = [v[2] for v in values]
    med[name] = statistics.median(cpu)
    print(f"  {name:6} CPU/request median {med[name]:.1f} us (min {min(cpu):.1f}, max {max(cpu):.1f}; "
          f"user {statistics.median(user):.1f}); req/s median {statistics.median(rps):.0f}")
print(f"  dpop/bearer CPU per request: {med['dpop'] / med['bearer']:.2f}  (dpop - bearer: {med['dpop'] - med['bearer']:.1f} us)")
# What one core of the relay serves when CPU is the limit: 1e6 us / the CPU per request.
print(f"  requests/s per core: bearer {1e6 / med['bearer']:.0f}, dpop {1e6 / med['dpop']:.0f} "
      f"(dpop/bearer {med['bearer'] / med['dpop']:.2f})")
PY
