#!/usr/bin/env bash
# Instructions the relay runs per proxied request, counted by callgrind (repeatable: a count does
# not depend on what else the machine runs). The relay, as bench/run.sh deploys it (an identity's
# token from bench/token_issuer.py injected, metrics on, one worker, access log off), forwards
# sequential keep-alive GETs to nginx; two runs of N and 3N requests, and the difference of their
# totals over 2N is the cost of one request without start-up and shutdown.
#
#   bench/instructions-per-request.sh [N]                  N = 2000
#   OAUTH_RELAY_BIN=… BASELINE_BIN=… bench/…               also an earlier build, same requests
#   SCHEME=https bench/…                                   nginx speaks TLS 1.3 (a P-256 certificate
#                                                          from a CA made here), the relay verifies it
#                                                          and keeps its one upstream connection
#   TOKEN_TYPE=DPoP bench/…                                a DPoP-bound token (`"dpop": true`): a proof per request
#   PEERS="nginx haproxy h2o" bench/…                      also the peers of bench/run.sh doing the same job (one
#                                                          worker or thread, upstream keep-alive, the token set
#                                                          as a static Authorization header; TLS 1.3 to the
#                                                          upstream with SCHEME=https), every thread counted
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
TOKEN_TYPE=${TOKEN_TYPE:-Bearer}
DPOP=$([ "$TOKEN_TYPE" = DPoP ] && echo true || echo false)
RELAY=${OAUTH_RELAY_BIN:-$PWD/.build/release/oauth-relay}
W=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
UP=$(free_port); IDP=$(free_port); PORT=$(free_port); ADMIN=$(free_port); PEER_PORT=$(free_port)
SCHEME=${SCHEME:-http}
UPSTREAM_TLS=""; RELAY_TLS=""; NGINX_TLS=""; HAPROXY_TLS=""; H2O_TLS=""
if [ "$SCHEME" = https ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$W/ca.key" -out "$W/ca.pem" \
    -days 2 -subj "/CN=bench TLS CA" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$W/up.key" -out "$W/up.csr" \
    -subj "/CN=localhost" 2>/dev/null
  printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" >"$W/up.ext"
  openssl x509 -req -in "$W/up.csr" -CA "$W/ca.pem" -CAkey "$W/ca.key" -CAcreateserial -out "$W/up.pem" -days 2 \
    -extfile "$W/up.ext" 2>/dev/null
  UPSTREAM_TLS=" ssl; ssl_protocols TLSv1.3; ssl_certificate $W/up.pem; ssl_certificate_key $W/up.key"
  RELAY_TLS=", \"tls\": { \"caFile\": \"$W/ca.pem\", \"serverName\": \"localhost\" }"
  NGINX_TLS="proxy_ssl_protocols TLSv1.3; proxy_ssl_trusted_certificate $W/ca.pem; proxy_ssl_verify on; proxy_ssl_name localhost; proxy_ssl_session_reuse on;"
  HAPROXY_TLS="ssl verify required ca-file $W/ca.pem"
  H2O_TLS="proxy.ssl.verify-peer: ON
        proxy.ssl.cafile: $W/ca.pem"
fi
cat >"$W/up.conf" <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections 64; }
http { access_log off; keepalive_requests 1000000; keepalive_timeout 300s;
  server { listen 127.0.0.1:$UP$UPSTREAM_TLS; location / { return 200 "hello from upstream\n"; } } }
NG
nginx -c "$W/up.conf" & PIDS+=($!)
python3 bench/token_issuer.py "$IDP" & PIDS+=($!)
cat >"$W/relay.json" <<JS
{ "listen": "127.0.0.1:$PORT", "admin": "127.0.0.1:$ADMIN", "workers": 1, "accessLog": false,
  "identities": { "bench": { "tokenUrl": "http://127.0.0.1:$IDP/token?type=$TOKEN_TYPE", "clientId": "bench", "clientSecret": "bench-secret",
                             "dpop": $DPOP } },
  "routes": [ { "match": { "pathPrefix": "/" }, "upstream": "$SCHEME://127.0.0.1:$UP", "identity": "bench"$RELAY_TLS } ] }
JS
# The peers, configured as in bench/run.sh (one worker, no master process, nothing logged). h2o
# runs as root here: it would switch to nobody, who cannot write callgrind's file at exit.
TOKEN="Bearer bench-static-token-0123456789abcdefghijklmnopqrstuvwxyz0123456789"
cat >"$W/nginx.conf" <<NG
worker_processes 1; daemon off; master_process off; pid $W/px.pid; error_log $W/px.err;
events { worker_connections 64; }
http { access_log off; keepalive_requests 1000000;
  upstream u { server 127.0.0.1:$UP; keepalive 128; }
  server { listen 127.0.0.1:$PEER_PORT; location / { proxy_pass $SCHEME://u; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_set_header Authorization "$TOKEN"; $NGINX_TLS } } }
NG
cat >"$W/haproxy.cfg" <<HA
global
  maxconn 100
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 30s
  option http-keep-alive
frontend f
  bind 127.0.0.1:$PEER_PORT
  http-request set-header Authorization "$TOKEN"
  default_backend b
backend b
  http-reuse always
  server s1 127.0.0.1:$UP $HAPROXY_TLS
HA
cat >"$W/h2o.conf" <<H2
num-threads: 1
user: root
error-log: $W/h2o.err
listen: { host: 127.0.0.1, port: $PEER_PORT }
hosts:
  default:
    paths:
      /:
        proxy.reverse.url: $SCHEME://127.0.0.1:$UP/
        proxy.preserve-host: ON
        proxy.header.set: "Authorization: $TOKEN"
        $H2O_TLS
H2
sleep 0.5

# Sends `count` GETs one after another on one connection (the first waits for the token).
send() {
  python3 bench/keepalive_gets.py "$PORT" "$1" "127.0.0.1:$PORT" /bench 120 30
}

# Total instructions of a relay run serving `count` requests. Valgrind cannot read the DWARF 5
# the Swift toolchain writes: it runs a copy without debug information.
run() {
  local bin="$W/relay-$RANDOM" count=$2 out="$W/callgrind.$RANDOM"
  cp "$1" "$bin" && strip --strip-debug "$bin"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" run --config "$W/relay.json" --log-level error 2>"$W/valgrind.log" &
  local pid=$!
  send "$count"
  kill -TERM $pid; wait $pid || true
  awk '/^summary:/ {print $2}' "$out"
  [ -z "${KEEP_PROFILE:-}" ] || cp "$out" "$KEEP_PROFILE.$count"
}

measure() {
  local bin=$1 small large
  small=$(run "$bin" "$N"); large=$(run "$bin" $((3 * N)))
  echo "$(( (large - small) / (2 * N) ))"
}

wait_port() { for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; return 1; }

# Total instructions (every thread) of a peer run serving `count` requests on PEER_PORT.
run_peer() {
  local peer=$1 count=$2 out="$W/callgrind.$RANDOM" pid
  case $peer in
    nginx) valgrind --tool=callgrind --callgrind-out-file="$out" nginx -c "$W/nginx.conf" 2>"$W/valgrind.log" & ;;
    haproxy) valgrind --tool=callgrind --callgrind-out-file="$out" haproxy -f "$W/haproxy.cfg" -db >/dev/null 2>"$W/valgrind.log" & ;;
    h2o) valgrind --tool=callgrind --callgrind-out-file="$out" h2o -c "$W/h2o.conf" >/dev/null 2>"$W/valgrind.log" & ;;
    *) echo "unknown peer $peer" >&2; return 1 ;;
  esac
  pid=$!
  wait_port "$PEER_PORT"
  python3 bench/keepalive_gets.py "$PEER_PORT" "$count" "127.0.0.1:$PEER_PORT" /bench 120 30
  kill -TERM $pid; wait $pid || true
  awk '/^summary:/ {s += $2} END {print s}' "$out"
}

measure_peer() {
  local small large
  small=$(run_peer "$1" "$N"); large=$(run_peer "$1" $((3 * N)))
  echo "$(( (large - small) / (2 * N) ))"
}

[ "$SCHEME" = http ] || echo "$SCHEME upstream"
printf '%-12s %s\n' "relay" "$(measure "$RELAY") instructions per request"
if [ -n "${BASELINE_BIN:-}" ]; then printf '%-12s %s\n' "baseline" "$(measure "$BASELINE_BIN") instructions per request"; fi
for peer in ${PEERS:-}; do printf '%-12s %s\n' "$peer" "$(measure_peer "$peer") instructions per request"; done
