#!/usr/bin/env bash
# CPU per request of per-caller routes against a plain token route, same relay binary, same job:
# proxy to one nginx upstream on loopback with a token the relay puts on the request. Three relays:
#
#   plain      the route's identity injects its own token (client credentials, bench/token_issuer.py)
#   validated  the route validates the caller's JWT (`inbound`: ES256 against the issuer's JWKS,
#              iss, aud, exp, a required scope) and passes `sub` on as X-Forwarded-User; the
#              identity's own token goes upstream
#   exchanged  as validated, and the identity exchanges each caller's token (RFC 8693,
#              `subjectTokenFrom: "caller"`): the upstream gets the token issued for that caller
#
# Every request carries a caller's `Authorization: Bearer <JWT>` (bench/caller_tokens.py); after
# the warm-up every validation and exchange is a cache hit, which is what this measures.
#
#   bench/caller-cpu.sh [seconds] [connections] [rounds] [callers]   (defaults: 5 s, 64, 5, 1)
#
# With more than one caller, wrk's requests take the callers' tokens in turn (a Lua script).
# Per round and relay: wrk -t1 -c$C -d$Ds; CPU = utime+stime of the relay process over the run,
# divided by the requests wrk completed. The relays run in a rotated order each round; medians,
# the spread (min-max) and the ratios to plain are printed. Read the spread before the ratio.
# Needs: wrk nginx python3 curl, the test virtualenv (jwcrypto) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-5}; C=${2:-64}; ROUNDS=${3:-5}; CALLERS=${4:-1}
RELAY=${OAUTH_RELAY_BIN:-.build/release/oauth-relay}
PYTHON=${PYTHON:-.venv-test/bin/python}
WORKERS=${WORKERS:-1}
for t in wrk nginx python3 curl; do command -v $t >/dev/null || { echo "missing $t: scripts/install-deps --test" >&2; exit 2; }; done
[ -x "$RELAY" ] || { echo "missing $RELAY: swift build -c release" >&2; exit 2; }
[ -x "$PYTHON" ] || { echo "missing $PYTHON: make .venv-test/.installed" >&2; exit 2; }
UP=19301; IDP=19302
declare -A PORT=([plain]=19303 [validated]=19304 [exchanged]=19305)
W=$(mktemp -d); PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; return 1; }

ISSUER="http://127.0.0.1:$IDP"
"$PYTHON" bench/caller_tokens.py "$W" "$ISSUER" orders-relay "$CALLERS"
cat >$W/up.conf <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP; location / { return 200 "hello from upstream\n"; }
    location = /api/check { return 200 "\$http_authorization|\$http_x_forwarded_user"; } } }
NG
nginx -c $W/up.conf & PIDS+=($!)
python3 bench/token_issuer.py $IDP --jwks $W/jwks.json & PIDS+=($!)
wait_port $UP; wait_port $IDP
relay_config() { # port identity-settings inbound
  cat <<JS
{ "listen": "127.0.0.1:$1", "admin": null, "workers": $WORKERS, "accessLog": false,
  "identities": { "bench": { "tokenUrl": "$ISSUER/token", "clientId": "bench", "clientSecret": "bench-secret" $2 } },
  "routes": [ { "match": { "pathPrefix": "/" }, "upstream": "http://127.0.0.1:$UP/api", "identity": "bench" $3 } ] }
JS
}
INBOUND=', "inbound": { "issuer": "'$ISSUER'", "audiences": ["orders-relay"], "jwksUrl": "'$ISSUER'/jwks",
  "algorithms": ["ES256"], "requiredScopes": ["orders.read"], "claimHeaders": { "sub": "X-Forwarded-User" } }'
EXCHANGE=', "grant": "urn:ietf:params:oauth:grant-type:token-exchange", "subjectTokenFrom": "caller", "audience": "orders-api"'
relay_config ${PORT[plain]} "" "" >$W/plain.json
relay_config ${PORT[validated]} "" "$INBOUND" >$W/validated.json
relay_config ${PORT[exchanged]} "$EXCHANGE" "$INBOUND" >$W/exchanged.json
declare -A PID
for name in plain validated exchanged; do
  "$RELAY" run --config $W/$name.json --log-level warning 2>$W/$name.err & PID[$name]=$!; PIDS+=(${PID[$name]})
done
for name in plain validated exchanged; do wait_port ${PORT[$name]}; done
FIRST=$(head -1 $W/tokens.txt)
# What each relay sends (nginx echoes Authorization and X-Forwarded-User on /api/check): the
# identity's token for plain and validated, the caller's name for validated and exchanged.
check() { # name pattern
  curl -fsS -H "Authorization: Bearer $FIRST" "http://127.0.0.1:${PORT[$1]}/check" | grep -Eq "$2" ||
    { echo "the $1 relay sends something else:" >&2; curl -sS -H "Authorization: Bearer $FIRST" "http://127.0.0.1:${PORT[$1]}/check" >&2; exit 1; }
}
check plain '^Bearer bench-[^ ]+\|$'
check validated '^Bearer bench-[^ ]+\|caller-0$'
check exchanged '^Bearer bench-[^ ]+\|caller-0$'
cat >$W/callers.lua <<'LUA'
local tokens, n = {}, 0
for line in io.lines(os.getenv("TOKENS")) do tokens[#tokens + 1] = "Bearer " .. line end
request = function()
  n = n % #tokens + 1
  return wrk.format("GET", "/x", { ["Authorization"] = tokens[n] })
end
LUA
export TOKENS=$W/tokens.txt  # read by callers.lua
for name in plain validated exchanged; do  # warm-up: every caller seen
  wrk -t1 -c"$C" -d1s -s $W/callers.lua "http://127.0.0.1:${PORT[$name]}/x" >/dev/null
done

. bench/cpu-round.sh
order=(plain validated exchanged)
echo "oauth-relay per-caller routes vs a plain token route: ${D}s runs, $C connections, $ROUNDS rounds, $CALLERS callers, wrk -t1, relay workers $WORKERS, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  for name in "${order[@]}"; do
    cpu_round "$round" "$name" "${PID[$name]}" -t1 -c"$C" -d"${D}s" -s $W/callers.lua "http://127.0.0.1:${PORT[$name]}/x"
  done
  order=("${order[@]:1}" "${order[0]}")
done
echo "  token requests at the issuer (start-up fetch, then one exchange per caller): $(curl -fsS http://127.0.0.1:$IDP/count)"
python3 - $W <<'PY'
import statistics, sys
names = ("plain", "validated", "exchanged")
rows = {name: [tuple(map(float, line.split())) for line in open(f"{sys.argv[1]}/{name}.txt")] for name in names}
med = {}
for name, values in rows.items():
    cpu = [v[0] for v in values]; rps = [v[1] for v in values]; user = [v[2] for v in values]
    med[name] = statistics.median(cpu)
    print(f"  {name:9} CPU/request median {med[name]:.1f} us (min {min(cpu):.1f}, max {max(cpu):.1f}; "
          f"user {statistics.median(user):.1f}); req/s median {statistics.median(rps):.0f}")
for name in names[1:]:
    print(f"  {name}/plain CPU per request: {med[name] / med['plain']:.2f}  ({name} - plain: {med[name] - med['plain']:.1f} us)")
PY
