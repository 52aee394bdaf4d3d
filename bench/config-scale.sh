#!/usr/bin/env bash
# What a large configuration costs: ROUTES routes (default 10,000: exact hosts, wildcard hosts
# and path prefixes, from bench/scale_config.py) and IDENTITIES identities (default 1,000,
# client_credentials), beside a configuration of 10 routes and 10 identities. Four parts (PARTS,
# default all four; the relay runs with one worker, as bench/instructions-per-request.sh's):
#
#  lookup   instructions per proxied request under callgrind (runs of N and 3N sequential
#           keep-alive GETs, the difference over 2N, as bench/instructions-per-request.sh), for the
#           typical route (an exact host: `Host: svc-00003.scale.test`, `/api/orders`) and for the
#           worst case (the last route in file order, a path prefix on any host, reached after the
#           exact host and every wildcard suffix of `a.b.c.unmatched.test` missed, among 4,000
#           prefixes), with 10 routes and with ROUTES; and, from the same profiles, the
#           instructions spent inside the route lookup itself (RouteTable's matchIndex, inclusive);
#  startup  time from the process's start to its listener accepting, to `GET /healthz` and to
#           `GET /readyz` (every identity holding a token), and RELOADS `POST /reload`s of a file
#           that changes every route's upstream: time to the answer, and to the typical route
#           serving the new upstream (bench/scale_probe.py); STARTS start-ups of each size; and
#           the relay's CPU time to ready and per reload (what a busy machine does not inflate);
#  memory   VmRSS once ready: per route (ROUTES routes less 10, 10 identities each) and per
#           identity (IDENTITIES identities less 10, 10 routes each);
#  refresh  wrk's latency through the typical route with IDENTITIES identities whose tokens live
#           TTL seconds (default 20: refreshed every 10 s, all at once, since they were fetched
#           together at start: 6 times the rate of `expires_in` 70) against the same relay whose
#           tokens live an hour, ROUNDS alternated rounds of ROUND_SECONDS each (default 3 × 20 s;
#           wrk -t1 -c CONNECTIONS, default 8), with the token requests counted in each round.
#           TTL=70 ROUND_SECONDS=65 is issue 25's literal setting.
#
# The upstream and the token endpoint are nginx (the token endpoint answers a fresh opaque token
# from `return`, so 1,000 identities start in milliseconds, not at Python's pace).
#
#   bench/config-scale.sh                    about 6 minutes on 2 idle cores (lookup 3, startup
#                                            and memory 1, refresh 2)
#   PARTS="startup memory" bench/config-scale.sh
#   OAUTH_RELAY_BIN=… ROUTES=… IDENTITIES=… N=… RELOADS=… STARTS=… ROUNDS=… TTL=… bench/config-scale.sh
#
# Needs: valgrind (lookup), wrk (refresh), nginx, curl, python3; the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUTES=${ROUTES:-10000}
IDENTITIES=${IDENTITIES:-1000}
N=${N:-2000}
RELOADS=${RELOADS:-5}
STARTS=${STARTS:-3}
ROUNDS=${ROUNDS:-3}
ROUND_SECONDS=${ROUND_SECONDS:-20}
TTL=${TTL:-20}
CONNECTIONS=${CONNECTIONS:-8}
PARTS=${PARTS:-lookup startup memory refresh}
RELAY=${OAUTH_RELAY_BIN:-$PWD/.build/release/oauth-relay}
W=$(mktemp -d)
PIDS=()
# Relays started inside functions, some run in a command substitution's subshell, write their
# pid to $W/started so that an early exit (Ctrl-C, a failed assert) stops them too.
track() { echo "$1" >>"$W/started"; }
trap 'kill "${PIDS[@]}" $(cat "$W/started" 2>/dev/null) 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
UP=$(free_port); IDP=$(free_port)
cat >"$W/nginx.conf" <<NG
worker_processes 1; daemon off; pid $W/nginx.pid; error_log $W/nginx.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP; location / { return 200 "\$uri\n"; } }
  server { listen 127.0.0.1:$IDP;
    location /token { access_log $W/tokens.log; default_type application/json;
      return 200 '{"access_token":"bench-\$request_id","token_type":"Bearer","expires_in":\$arg_ttl}'; } } }
NG
nginx -c "$W/nginx.conf" & PIDS+=($!)
UPSTREAM="http://127.0.0.1:$UP"
token_url() { echo "http://127.0.0.1:$IDP/token?ttl=$1"; }
token_requests() { [ -f "$W/tokens.log" ] && wc -l <"$W/tokens.log" || echo 0; }
echo "load before: $(cat /proc/loadavg)"

# Writes a configuration of `routes` routes and `identities` identities whose tokens live `ttl`
# seconds, listening on `port` (admin on `admin`), to `file`.
config() {
  local file=$1 routes=$2 identities=$3 ttl=$4 port=$5 admin=$6
  python3 bench/scale_config.py --routes "$routes" --identities "$identities" --upstream "$UPSTREAM" \
    --token-url "$(token_url "$ttl")" --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" --workers 1 >"$file"
}

# Sends `count` GETs for `host` and `path` one after another on one connection (the first waits
# for the token).
send() {
  python3 bench/keepalive_gets.py "$1" "$2" "$3" "$4" 300 60
}

# "total lookup" instructions of a callgrind run of `routes` routes serving `count` requests for
# `host` and `path`. Valgrind cannot read the DWARF 5 the Swift toolchain writes: it runs a copy
# without debug information.
callgrind_run() {
  local routes=$1 count=$2 host=$3 path=$4
  local port=$(free_port) bin="$W/relay-$RANDOM" out="$W/callgrind.$RANDOM"
  config "$W/lookup-$routes.json" "$routes" 1 3600 "$port" "$(free_port)"
  cp "$RELAY" "$bin" && strip --strip-debug "$bin"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" run --config "$W/lookup-$routes.json" --log-level error \
    2>"$W/valgrind.log" &
  local pid=$!
  track $pid
  send "$port" "$count" "$host" "$path"
  kill -TERM $pid; wait $pid || true
  # The lookup's inclusive cost: RouteTable.matchIndex(host:path:), whatever inlined into it.
  local lookup=$(callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null \
    | awk '/10RouteTableV10matchIndex4host4path/ { gsub(",", "", $1); sum += $1 } END { print sum + 0 }')
  echo "$(awk '/^summary:/ {print $2}' "$out") $lookup"
  rm -f "$out" "$bin"
}

lookup_part() {
  echo
  echo "== lookup: instructions per request (callgrind, N=$N and 3N requests, one worker)"
  printf '%-8s %-9s %12s %12s\n' routes request "per request" "in lookup"
  local typical=() worst=()
  for routes in 10 "$ROUTES"; do
    for kind in typical worst; do
      local host path
      if [ "$kind" = typical ]; then host=svc-00003.scale.test path=/api/orders; else host=a.b.c.unmatched.test path=/p/99999/orders; fi
      local small=($(callgrind_run "$routes" "$N" "$host" "$path")) large=($(callgrind_run "$routes" $((3 * N)) "$host" "$path"))
      local request=$(( (large[0] - small[0]) / (2 * N) )) lookup=$(( (large[1] - small[1]) / (2 * N) ))
      printf '%-8s %-9s %12s %12s\n' "$routes" "$kind" "$request" "$lookup"
      eval "${kind}_$([ "$routes" = 10 ] && echo small || echo large)=($request $lookup)"
    done
  done
  for kind in typical worst; do
    local -n small="${kind}_small" large="${kind}_large"
    python3 -c "import sys; s, l = [int(x) for x in sys.argv[1:3]], [int(x) for x in sys.argv[3:5]]
print(f'$kind: $ROUTES routes / 10 routes: {l[0] / s[0]:.3f}x per request, lookup {l[1]} against {s[1]} instructions ({l[1] / max(1, s[1]):.2f}x)')" \
      "${small[@]}" "${large[@]}"
  done
}

# Median and range of a list of numbers.
spread() { python3 -c 'import statistics, sys; v = [float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.1f} ({min(v):.1f}–{max(v):.1f})")' "$@"; }

probe() {
  python3 bench/scale_probe.py --relay "$RELAY" --upstream "$UPSTREAM" --token-url "$(token_url 3600)" "$@"
}

startup_part() {
  echo
  echo "== startup and reload, ms (median (min–max) of $STARTS start-ups, $RELOADS reloads each)"
  printf '%-22s %-18s %-18s %-18s %-18s %-18s %-18s %-18s\n' configuration accepting healthz ready "ready CPU" \
    "reload answer" "reload serving" "reload CPU"
  for size in "10 10" "$ROUTES $IDENTITIES"; do
    set -- $size
    local accepting=() healthz=() ready=() ready_cpu=() answer=() serving=() reload_cpu=()
    for _ in $(seq "$STARTS"); do
      local result=$(probe --routes "$1" --identities "$2" --reloads "$RELOADS")
      accepting+=($(jq .accepting_ms <<<"$result")); healthz+=($(jq .healthz_ms <<<"$result")); ready+=($(jq .ready_ms <<<"$result"))
      ready_cpu+=($(jq .ready_cpu_ms <<<"$result"))
      answer+=($(jq '.reloads[].answer_ms' <<<"$result")); serving+=($(jq '.reloads[].serving_ms' <<<"$result"))
      reload_cpu+=($(jq '.reloads[].cpu_ms' <<<"$result"))
    done
    printf '%-22s %-18s %-18s %-18s %-18s %-18s %-18s %-18s\n' "$1 routes, $2 ids" "$(spread "${accepting[@]}")" \
      "$(spread "${healthz[@]}")" "$(spread "${ready[@]}")" "$(spread "${ready_cpu[@]}")" "$(spread "${answer[@]}")" \
      "$(spread "${serving[@]}")" "$(spread "${reload_cpu[@]}")"
  done
}

memory_part() {
  echo
  echo "== memory: VmRSS once ready, one worker"
  local base=$(probe --routes 10 --identities 10 | jq .rss_kib)
  local routes=$(probe --routes "$ROUTES" --identities 10 | jq .rss_kib)
  local identities=$(probe --routes 10 --identities "$IDENTITIES" | jq .rss_kib)
  echo "10 routes, 10 identities: $base KiB; $ROUTES routes: $routes KiB; $IDENTITIES identities: $identities KiB"
  echo "per route: $(( (routes - base) * 1024 / (ROUTES - 10) )) bytes; per identity: $(( (identities - base) * 1024 / (IDENTITIES - 10) )) bytes"
}

# One wrk round through the typical route of a relay with tokens living `ttl` seconds: prints
# "p50_ms p99_ms requests_per_second token_requests".
refresh_round() {
  local ttl=$1 port=$(free_port) admin=$(free_port)
  config "$W/refresh-$ttl.json" "$ROUTES" "$IDENTITIES" "$ttl" "$port" "$admin"
  "$RELAY" run --config "$W/refresh-$ttl.json" --log-level error 2>"$W/refresh.log" &
  local pid=$! deadline=$((SECONDS + 120))
  track $pid
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin/readyz")" = 200 ]; do
    [ $SECONDS -lt $deadline ] || { echo "relay not ready" >&2; kill $pid; return 1; }
    sleep 0.05
  done
  local before=$(token_requests)
  wrk -t1 -c"$CONNECTIONS" -d"${ROUND_SECONDS}s" --latency -H "Host: svc-00003.scale.test" "http://127.0.0.1:$port/api/orders" >"$W/wrk.out"
  local after=$(token_requests)
  kill -TERM $pid; wait $pid || true
  python3 - "$W/wrk.out" "$((after - before))" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def ms(label):
    value, unit = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
assert not errors, f"{errors.group(1)} answers were not 2xx"
print(f"{ms('50%'):.3f} {ms('99%'):.3f} {rate:.0f} {sys.argv[2]}")
PY
}

refresh_part() {
  echo
  echo "== refresh: wrk -t1 -c$CONNECTIONS through one route, $IDENTITIES identities, $ROUTES routes, one worker"
  printf '%-6s %-22s %10s %10s %10s %16s\n' round tokens "p50 ms" "p99 ms" "req/s" "token requests"
  local refreshing=() steady=()
  for round in $(seq "$ROUNDS"); do
    local order=("$TTL" 3600)
    [ $((round % 2)) = 0 ] && order=(3600 "$TTL")
    for ttl in "${order[@]}"; do
      local result=($(refresh_round "$ttl"))
      local label=$([ "$ttl" = 3600 ] && echo "living 1 h" || echo "living $TTL s")
      printf '%-6s %-22s %10s %10s %10s %16s\n' "$round" "$label" "${result[@]}"
      if [ "$ttl" = 3600 ]; then steady+=("${result[1]}"); else refreshing+=("${result[1]}"); fi
    done
  done
  python3 - "${#refreshing[@]}" "${refreshing[@]}" "${steady[@]}" <<'PY'
import statistics, sys
count = int(sys.argv[1])
refreshing, steady = [float(x) for x in sys.argv[2:2 + count]], [float(x) for x in sys.argv[2 + count:]]
ratios = [r / s for r, s in zip(refreshing, steady)]
print(f"p99 refreshing {statistics.median(refreshing):.3f} ms ({min(refreshing):.3f}–{max(refreshing):.3f}), "
      f"steady {statistics.median(steady):.3f} ms ({min(steady):.3f}–{max(steady):.3f}); "
      f"ratio per round {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})")
PY
}

for part in $PARTS; do "${part}_part"; done
echo
echo "load after: $(cat /proc/loadavg)"
