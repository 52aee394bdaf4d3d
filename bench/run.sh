#!/usr/bin/env bash
# Side-by-side throughput of oauth-relay, nginx and HAProxy doing the same job on loopback:
# proxy to one nginx upstream (keep-alive) and set an `Authorization: Bearer …` header.
# The relay runs three ways: `relay` sets a static header (`setHeaders`, like the peers),
# `relay-token` injects an identity's token (fetched from bench/token_issuer.py, 1 h lifetime),
# `relay-5s` the same with a 5 s lifetime, so tokens expire and are refreshed under load.
# Everything runs in one go on this machine, so read the ratios, not the absolute figures.
#
#   bench/run.sh [seconds] [connections] [rounds]   (defaults: 5 s, 64 connections, 3 rounds)
#   Each round measures the three proxies in a rotated order; medians are reported, so one
#   unlucky run on a busy 2-core machine does not decide the ratio.
#   WORKERS_LIST="1 0" bench/run.sh             worker counts to compare (0 = relay one per core,
#                                               peers as many as cores)
#   SCHEME=https bench/run.sh                   the upstream speaks TLS (a certificate from a CA the
#                                               run generates); every proxy verifies it and keeps
#                                               connections (and TLS sessions) alive
#   IDLE_CONNECTIONS=10000 bench/run.sh         also measure relay RSS holding that many idle
#                                               keep-alive connections (0 to skip)
#   METRICS=0 bench/run.sh                      relays with `"metrics": false` (default 1: metrics
#                                               on, as deployed; the run checks the relay's request
#                                               count against wrk's)
# Needs: wrk nginx haproxy (scripts/install-deps --test) and a release build (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-5}; C=${2:-64}; ROUNDS=${3:-3}
WORKERS_LIST=${WORKERS_LIST:-"1 0"}
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-10000}
SCHEME=${SCHEME:-http}
METRICS=${METRICS:-1}
RELAY=${OAUTH_RELAY_BIN:-.build/release/oauth-relay}
for t in wrk nginx haproxy python3; do command -v $t >/dev/null || { echo "missing $t: scripts/install-deps --test" >&2; exit 2; }; done
[ -x "$RELAY" ] || { echo "missing $RELAY: make build" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
CORES=$(nproc)
TOKEN="Bearer abcdefghijklmnopqrstuvwxyz0123456789"
UP=19001; IDP=19002; RELAY_PORT=19100; NGINX_PORT=19101; HAPROXY_PORT=19102; TOKEN_PORT=19103; SHORT_PORT=19104
ADMIN_PORT=19110   # the relay's admin port (+3 and +4 for the token relays), when METRICS=1
admin() { echo "\"127.0.0.1:$1\", \"metrics\": $([ "$METRICS" = 1 ] && echo true || echo false)"; }
W=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT

wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; return 1; }
rss_kib() { awk '/VmRSS/{print $2}' /proc/$1/status; }

UPSTREAM_TLS=""; NGINX_UPSTREAM_TLS=""; HAPROXY_UPSTREAM_TLS=""; RELAY_UPSTREAM_TLS=""
if [ "$SCHEME" = https ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout $W/ca.key -out $W/ca.pem -days 1 -subj "/CN=bench CA" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout $W/up.key -out $W/up.csr -subj "/CN=localhost" 2>/dev/null
  printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" >$W/ext
  openssl x509 -req -in $W/up.csr -CA $W/ca.pem -CAkey $W/ca.key -CAcreateserial -out $W/up.pem -days 1 -extfile $W/ext 2>/dev/null
  UPSTREAM_TLS="ssl; ssl_certificate $W/up.pem; ssl_certificate_key $W/up.key; ssl_session_cache shared:S:1m"
  NGINX_UPSTREAM_TLS="proxy_ssl_trusted_certificate $W/ca.pem; proxy_ssl_verify on; proxy_ssl_name localhost; proxy_ssl_session_reuse on;"
  HAPROXY_UPSTREAM_TLS="ssl verify required ca-file $W/ca.pem"
  RELAY_UPSTREAM_TLS=", \"tls\": { \"caFile\": \"$W/ca.pem\" }"
fi
cat >$W/up.conf <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP ${UPSTREAM_TLS:+$UPSTREAM_TLS}; location / { return 200 "hello from upstream\n"; } } }
NG
nginx -c $W/up.conf & PIDS+=($!)
python3 bench/token_issuer.py $IDP & PIDS+=($!)
wait_port $UP; wait_port $IDP

start_peers() { # workers
  local n=$1
  cat >$W/px.conf <<NG
worker_processes $n; daemon off; pid $W/px.pid; error_log $W/px.err;
events { worker_connections 16384; }
http { access_log off; keepalive_requests 1000000;
  upstream u { server 127.0.0.1:$UP; keepalive 128; }
  server { listen 127.0.0.1:$NGINX_PORT reuseport; location / { proxy_pass $SCHEME://u; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_set_header Authorization "$TOKEN"; $NGINX_UPSTREAM_TLS } } }
NG
  cat >$W/hap.cfg <<HA
global
  maxconn 8000
  nbthread $n
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  option http-keep-alive
frontend f
  bind 127.0.0.1:$HAPROXY_PORT
  http-request set-header Authorization "$TOKEN"
  default_backend b
backend b
  http-reuse always
  server s1 127.0.0.1:$UP $HAPROXY_UPSTREAM_TLS
HA
  cat >$W/relay.json <<JS
{ "listen": "127.0.0.1:$RELAY_PORT", "admin": $(admin $ADMIN_PORT), "workers": $2, "accessLog": false,
  "routes": [ { "match": { "pathPrefix": "/" }, "upstream": "$SCHEME://127.0.0.1:$UP",
                "setHeaders": { "Authorization": "$TOKEN" }$RELAY_UPSTREAM_TLS } ] }
JS
  for ttl in 3600 5; do
    port=$([ $ttl = 5 ] && echo $SHORT_PORT || echo $TOKEN_PORT)
    cat >$W/relay-$ttl.json <<JS
{ "listen": "127.0.0.1:$port", "admin": $(admin $((ADMIN_PORT + port - RELAY_PORT))), "workers": $2, "accessLog": false,
  "identities": { "bench": { "tokenUrl": "http://127.0.0.1:$IDP/token?ttl=$ttl", "clientId": "bench", "clientSecret": "bench-secret" } },
  "routes": [ { "match": { "pathPrefix": "/" }, "upstream": "$SCHEME://127.0.0.1:$UP", "identity": "bench"$RELAY_UPSTREAM_TLS } ] }
JS
  done
  nginx -c $W/px.conf & NGINX_PID=$!
  haproxy -f $W/hap.cfg -db >/dev/null 2>&1 & HAPROXY_PID=$!
  "$RELAY" run --config $W/relay.json --log-level warning 2>$W/relay.err & RELAY_PID=$!
  "$RELAY" run --config $W/relay-3600.json --log-level warning 2>$W/relay-token.err & TOKEN_PID=$!
  "$RELAY" run --config $W/relay-5.json --log-level warning 2>$W/relay-5s.err & SHORT_PID=$!
  PIDS+=($NGINX_PID $HAPROXY_PID $RELAY_PID $TOKEN_PID $SHORT_PID)
  wait_port $NGINX_PORT; wait_port $HAPROXY_PORT; wait_port $RELAY_PORT; wait_port $TOKEN_PORT; wait_port $SHORT_PORT
}
stop_peers() {
  kill $NGINX_PID $HAPROXY_PID $RELAY_PID $TOKEN_PID $SHORT_PID 2>/dev/null || true
  wait $NGINX_PID $HAPROXY_PID $RELAY_PID $TOKEN_PID $SHORT_PID 2>/dev/null || true
}

declare -A RPS P99
measure() { # name port -> appends "rps p99_us" to $W/name.txt
  local out; out=$(wrk -t1 -c"$C" -d"${D}s" --latency "http://127.0.0.1:$2/" 2>&1)
  local rps p99 non2xx errors
  rps=$(awk '/Requests\/sec/{print $2}' <<<"$out"); p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  awk '/requests in/{print $1}' <<<"$out" >>"$W/$1.count"
  non2xx=$(awk '/Non-2xx/{print $NF}' <<<"$out"); errors=$(awk '/Socket errors/{print}' <<<"$out")
  echo "$rps $(to_us "$p99")" >>"$W/$1.txt"
  [ -z "$non2xx$errors" ] || echo "  $1: non2xx=${non2xx:-0} $errors" >&2
}
median() { sort -n | awk '{ v[NR]=$1 } END { if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'; }
summarize() { # name
  RPS[$1]=$(awk '{print $1}' "$W/$1.txt" | median); P99[$1]=$(awk '{print $2}' "$W/$1.txt" | median)
  printf "  %-8s rps=%-10s p99=%sus   (runs: %s)\n" "$1" "${RPS[$1]}" "${P99[$1]}" "$(awk '{printf "%s/%sus ", $1, $2}' "$W/$1.txt")"
}
to_us() { awk -v v="$1" 'BEGIN { n=v+0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n*1000; else if (v ~ /s$/) print n*1000000; else print n }'; }
# Requests the relay behind admin port $1 counted (oauth_relay_requests_total summed over its series).
counted() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^oauth_relay_requests_total\{/{s+=$NF} END{print s+0}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }

echo "oauth-relay bench: $SCHEME upstream, ${D}s per run, $C connections, $ROUNDS rounds, wrk -t1, $CORES cores, $(date -u +%FT%TZ)"
for workers in $WORKERS_LIST; do
  peer_workers=$workers; [ "$workers" = 0 ] && peer_workers=$CORES
  echo "workers: relay $workers$([ "$workers" = 0 ] && echo " (one per core)"), nginx $peer_workers, haproxy $peer_workers threads"
  start_peers "$peer_workers" "$workers"
  wrk -t1 -c"$C" -d1s "http://127.0.0.1:$RELAY_PORT/" >/dev/null 2>&1 || true   # warm-up
  rm -f "$W"/*.txt "$W"/*.count
  [ "$METRICS" = 1 ] && counted_before=$(counted $ADMIN_PORT)
  order=(relay relay-token relay-5s nginx haproxy)
  declare -A PORT=([relay]=$RELAY_PORT [relay-token]=$TOKEN_PORT [relay-5s]=$SHORT_PORT [nginx]=$NGINX_PORT [haproxy]=$HAPROXY_PORT)
  tokens_before=$(curl -s http://127.0.0.1:$IDP/count | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
  for round in $(seq "$ROUNDS"); do
    for name in "${order[@]}"; do measure "$name" "${PORT[$name]}"; done
    order=("${order[@]:1}" "${order[0]}")
  done
  for name in relay relay-token relay-5s nginx haproxy; do summarize $name; done
  tokens_after=$(curl -s http://127.0.0.1:$IDP/count | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
  for name in relay relay-token relay-5s; do
    echo "  $name/nginx rps=$(ratio "${RPS[$name]}" "${RPS[nginx]}") p99=$(ratio "${P99[$name]}" "${P99[nginx]}")   $name/haproxy rps=$(ratio "${RPS[$name]}" "${RPS[haproxy]}") p99=$(ratio "${P99[$name]}" "${P99[haproxy]}")"
  done
  echo "  relay-5s/relay-token p99=$(ratio "${P99[relay-5s]}" "${P99[relay-token]}") (token expiry under load); token requests during the runs: $((tokens_after - tokens_before))"
  if [ "$METRICS" = 1 ]; then
    echo "  metrics on: the relay counted $(( $(counted $ADMIN_PORT) - counted_before )) requests, wrk sent $(awk '{s+=$1} END{print s}' "$W/relay.count")"
  else
    echo "  metrics off (METRICS=0)"
  fi
  echo "  relay RSS after the run: $(rss_kib $RELAY_PID) KiB"
  if [ "$IDLE_CONNECTIONS" -gt 0 ] && [ "$workers" = "$(echo $WORKERS_LIST | awk '{print $1}')" ]; then
    before=$(rss_kib $RELAY_PID)
    python3 bench/idle_connections.py 127.0.0.1 $RELAY_PORT "$IDLE_CONNECTIONS" $RELAY_PID
    echo "  relay RSS before the idle connections: $before KiB"
  fi
  stop_peers
done
