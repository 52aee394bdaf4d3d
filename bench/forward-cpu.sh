#!/usr/bin/env bash
# CPU per request through the forward proxy's interception (HTTPS_PROXY), against nginx doing the same
# job as a TLS-terminating reverse proxy, in one run:
#   upstream  nginx, TLS 1.3 on 127.0.0.1:$UP with a certificate for api.test from a bench CA; keep-alive.
#   relay     forward.listen 127.0.0.1:$FWD; the client sends CONNECT api.test:443 once per connection,
#             then HTTPS requests inside (the relay's leaf from its name-constrained CA); the route for
#             api.test injects a token (bench/token_issuer.py, 1 h) and forwards over its verified,
#             pooled TLS connection to the upstream.
#   nginx     listen 127.0.0.1:$NGX ssl with a certificate for api.test; proxy_pass to the same
#             upstream (keepalive 128, proxy_ssl_verify on, proxy_ssl_session_reuse on, TLSv1.3), and
#             a fixed Authorization header.
# Both sides TLS 1.3 with P-256; the client (bench/tls_keepalive_client.py) keeps each connection
# alive and reads every answer. Per round and proxy: CPU = utime+stime of the proxy's processes
# (/proc) over the run / requests completed. Rounds rotate the order; medians and min-max.
#
#   bench/forward-cpu.sh [seconds] [connections] [rounds]   (defaults: 5 s, 8 connections, 5 rounds)
# Needs: nginx python3 openssl curl (scripts/install-deps --test) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-5}; C=${2:-8}; ROUNDS=${3:-5}
RELAY=${OAUTH_RELAY_BIN:-.build/release/oauth-relay}
WORKERS=${WORKERS:-1}
for t in nginx python3 openssl curl; do command -v $t >/dev/null || { echo "missing $t: scripts/install-deps --test" >&2; exit 2; }; done
[ -x "$RELAY" ] || { echo "missing $RELAY: swift build -c release" >&2; exit 2; }
UP=19301; IDP=19302; FWD=19303; NGX=19304; ADMIN=19305
W=$(mktemp -d); PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; return 1; }

# The bench CA and api.test's certificate (the upstream's, and nginx-as-proxy's own).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $W/ca.key \
  -out $W/ca.pem -days 2 -subj "/CN=bench TLS CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $W/api.key \
  -out $W/api.csr -subj "/CN=api.test" 2>/dev/null
printf "subjectAltName=DNS:api.test\n" >$W/api.ext
openssl x509 -req -in $W/api.csr -CA $W/ca.pem -CAkey $W/ca.key -CAcreateserial \
  -out $W/api.pem -days 2 -extfile $W/api.ext 2>/dev/null

cat >$W/up.conf <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000; keepalive_timeout 300s;
  ssl_protocols TLSv1.3; ssl_certificate $W/api.pem; ssl_certificate_key $W/api.key;
  server { listen 127.0.0.1:$UP ssl; location / { return 200 "hello from upstream\n"; }
    location = /check { return 200 "\$http_authorization"; } } }
NG
cat >$W/px.conf <<NG
worker_processes $WORKERS; daemon off; pid $W/px.pid; error_log $W/px.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000; keepalive_timeout 300s;
  upstream u { server 127.0.0.1:$UP; keepalive 128; keepalive_requests 1000000; keepalive_timeout 300s; }
  server { listen 127.0.0.1:$NGX ssl; ssl_protocols TLSv1.3; ssl_certificate $W/api.pem; ssl_certificate_key $W/api.key;
    location / { proxy_pass https://u; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_set_header Host api.test; proxy_set_header Authorization "Bearer bench-static-token-0123456789";
      proxy_ssl_protocols TLSv1.3; proxy_ssl_trusted_certificate $W/ca.pem; proxy_ssl_verify on;
      proxy_ssl_name api.test; proxy_ssl_server_name on; proxy_ssl_session_reuse on; } } }
NG
cat >$W/relay.json <<JS
{ "listen": "127.0.0.1:$ADMIN", "admin": null, "workers": $WORKERS, "accessLog": false, "store": null,
  "forward": { "listen": "127.0.0.1:$FWD", "caDirectory": "$W/relay-ca" },
  "identities": { "bench": { "tokenUrl": "http://127.0.0.1:$IDP/token", "clientId": "bench", "clientSecret": "bench-secret" } },
  "routes": [ { "match": { "host": "api.test" }, "upstream": "https://127.0.0.1:$UP", "identity": "bench",
                "tls": { "caFile": "$W/ca.pem", "serverName": "api.test" } } ] }
JS
nginx -c $W/up.conf & PIDS+=($!)
python3 bench/token_issuer.py $IDP & PIDS+=($!)
wait_port $UP; wait_port $IDP
"$RELAY" ca --config $W/relay.json >/dev/null
nginx -c $W/px.conf & NGINX_PID=$!; PIDS+=($NGINX_PID)
"$RELAY" run --config $W/relay.json --log-level warning 2>$W/relay.err & RELAY_PID=$!; PIDS+=($RELAY_PID)
wait_port $NGX; wait_port $FWD
# Both proxies answer with the upstream's body and send a Bearer token upstream.
curl -fsS -x http://127.0.0.1:$FWD --cacert $W/relay-ca/ca.pem https://api.test/check | grep -Eq '^Bearer bench-' \
  || { echo "the relay does not intercept and inject" >&2; cat $W/relay.err >&2; exit 1; }
curl -fsS --cacert $W/ca.pem --resolve api.test:$NGX:127.0.0.1 https://api.test:$NGX/check | grep -Eq '^Bearer ' \
  || { echo "nginx does not proxy" >&2; exit 1; }

HZ=$(getconf CLK_TCK)
tree_pids() { local p=$1; echo $p; for c in $(pgrep -P $p); do tree_pids $c; done; }
cpu_ticks() { local u=0 s=0 a b; for p in $(tree_pids $1); do [ -r /proc/$p/stat ] || continue
    read -r a b < <(awk '{print $14, $15}' /proc/$p/stat); u=$((u + a)); s=$((s + b)); done; echo $u $s; }
declare -A PID=([relay]=$RELAY_PID [nginx]=$NGINX_PID)
declare -A CLIENT=([relay]="--port 443 --proxy $FWD --cafile $W/relay-ca/ca.pem" [nginx]="--port $NGX --cafile $W/ca.pem")
for name in relay nginx; do python3 bench/tls_keepalive_client.py ${CLIENT[$name]} --host api.test --connections 2 --seconds 1 >/dev/null; done
echo "forward proxy interception vs nginx TLS reverse proxy: ${D}s runs, $C connections, $ROUNDS rounds, workers $WORKERS, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
order=(relay nginx)
for round in $(seq "$ROUNDS"); do
  for name in "${order[@]}"; do
    read -r u0 s0 < <(cpu_ticks ${PID[$name]})
    read -r requests refused < <(python3 bench/tls_keepalive_client.py ${CLIENT[$name]} --host api.test --connections "$C" --seconds "$D")
    read -r u1 s1 < <(cpu_ticks ${PID[$name]})
    [ "$refused" = 0 ] || echo "  $name: $refused non-200 answers" >&2
    read -r us user_us rps < <(awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz=$HZ -v n=$requests -v d=$D \
        'BEGIN { printf "%.1f %.1f %.0f\n", (u + s) / hz * 1e6 / n, u / hz * 1e6 / n, n / d }')
    echo "$us $rps $user_us" >>"$W/$name.txt"
    echo "  round $round $name: $us us CPU/request ($user_us user), $rps req/s"
  done
  order=("${order[1]}" "${order[0]}")
done
python3 - $W <<'PY'
import statistics, sys
rows = {name: [tuple(map(float, line.split())) for line in open(f"{sys.argv[1]}/{name}.txt")] for name in ("relay", "nginx")}
med = {}
for name, values in rows.items():
    cpu = [v[0] for v in values]; rps = [v[1] for v in values]; user = [v[2] for v in values]
    med[name] = statistics.median(cpu)
    print(f"  {name:6} CPU/request median {med[name]:.1f} us (min {min(cpu):.1f}, max {max(cpu):.1f}; "
          f"user {statistics.median(user):.1f}); req/s median {statistics.median(rps):.0f}")
print(f"  relay/nginx CPU per request: {med['relay'] / med['nginx']:.2f}")
PY
