#!/usr/bin/env bash
# oauth-relay side by side with nginx, HAProxy and h2o, doing the same job on loopback: proxy to one
# nginx upstream (keep-alive) and set an `Authorization` header. The relay runs as deployed: it
# injects an identity's token (fetched from bench/token_issuer.py) and keeps its metrics.
#
#   bench/run.sh [seconds] [connections] [rounds]   (defaults: 5 s, 64 connections, 5 rounds)
#
# For every proxy, in one run: requests/s, p50 and p99 (wrk -t1), CPU time per request and its user
# part (utime+stime of all the proxy's processes, from /proc, over the run, divided by the requests
# wrk completed: far steadier than requests/s on a shared machine), resident memory at start, and
# memory per idle keep-alive connection (IDLE_CONNECTIONS connections with one request each, held:
# the growth of the proxy's resident memory divided by their number), and the same after a burst:
# every proxy restarted, IDLE_CONNECTIONS connections opened and then all their requests sent at
# once (`bench/idle_connections.py --burst`), with the upstream connections each proxy still holds
# once they are answered and idle. Each round runs the proxies in a rotated order; the table shows
# medians, and the spread (min–max) of the CPU figure.
#
#   WORKERS_LIST="1 0"        worker counts to compare (0: the relay one per core, the peers as many
#                             workers/threads as cores)
#   RELAYS="relay"            relay variants: relay (token injected), relay-static (a static header,
#                             like the peers), relay-5s (5-second tokens, refreshed under load)
#   BASELINE_BIN=path         also run that relay binary (an earlier build) as "baseline", configured
#                             like "relay": before/after figures from the same run
#   PEERS="nginx haproxy h2o"
#   IDLE_CONNECTIONS=10000    0 to skip; measured at the first worker count
#   IDLE_MODES="sequential burst"   which idle measures to take: requests at most 64 at a time, and
#                             all at once (each adds about 15-40 s per proxy)
#   METRICS=0                 relays with `"metrics": false` (default: on, as deployed; the run then
#                             checks the relay's request count against wrk's)
#   SCHEME=https              the upstream speaks TLS (a CA the run generates); every proxy verifies it
#   PIN=1                     wrk on CPU 0, everything else on the other CPUs (taskset), so wrk does
#                             not compete with the proxy for a core
# Needs: wrk nginx haproxy h2o python3 curl (scripts/install-deps --test) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-5}; C=${2:-64}; ROUNDS=${3:-5}
WORKERS_LIST=${WORKERS_LIST:-"1 0"}
RELAYS=${RELAYS:-relay}
PEERS=${PEERS:-"nginx haproxy h2o"}
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-10000}
IDLE_MODES=${IDLE_MODES:-"sequential burst"}
SCHEME=${SCHEME:-http}
METRICS=${METRICS:-1}
PIN=${PIN:-0}
RELAY=${OAUTH_RELAY_BIN:-.build/release/oauth-relay}
BASELINE_BIN=${BASELINE_BIN:-}
[ -z "$BASELINE_BIN" ] || [ -x "$BASELINE_BIN" ] || { echo "BASELINE_BIN $BASELINE_BIN is not executable" >&2; exit 2; }
[ -z "$BASELINE_BIN" ] || RELAYS="$RELAYS baseline"
for t in wrk $PEERS python3 curl; do command -v $t >/dev/null || { echo "missing $t: scripts/install-deps --test" >&2; exit 2; }; done
[ -x "$RELAY" ] || { echo "missing $RELAY: make build" >&2; exit 2; }
# 10,000 idle connections per proxy, and HAProxy wants two descriptors per connection.
ulimit -Hn 65536 2>/dev/null || true; ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
HAPROXY_MAXCONN=$(( ($(ulimit -n) - 100) / 2 < 20000 ? ($(ulimit -n) - 100) / 2 : 20000 ))
CORES=$(nproc)
PROXY_CPUS=0-$((CORES - 1)); WRK=(wrk)
if [ "$PIN" = 1 ]; then PROXY_CPUS=1-$((CORES - 1)); WRK=(taskset -c 0 wrk); fi
TOKEN="Bearer abcdefghijklmnopqrstuvwxyz0123456789"
UP=19001; IDP=19002
declare -A PORT=([relay]=19100 [relay-static]=19101 [relay-5s]=19102 [nginx]=19103 [haproxy]=19104 [h2o]=19105 [baseline]=19106)
ADMIN_BASE=19110   # the relays' admin listeners: 19110 + (port - 19100)
W=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT

wait_port() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; return 1; }
tree() { local p=$1; echo "$p"; for c in $(pgrep -P "$p"); do tree "$c"; done; }
cpu_ticks() { # user system, over the process tree of $1
  local u=0 s=0 a b
  for p in $(tree "$1"); do
    read -r a b < <(awk '{print $14, $15}' "/proc/$p/stat" 2>/dev/null || echo "0 0"); u=$((u + a)); s=$((s + b))
  done
  echo $u $s
}
rss_kib() { local t=0 p; for p in $(tree "$1"); do t=$((t + $(awk '/VmRSS/{print $2}' "/proc/$p/status" 2>/dev/null || echo 0))); done; echo $t; }
to_us() { awk -v v="$1" 'BEGIN { n=v+0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n*1000; else if (v ~ /s$/) print n*1000000; else print n }'; }
relay_counted() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^oauth_relay_requests_total\{/{s+=$NF} END{print s+0}'; }
# Requests each worker of the relay behind admin port $1 answered (how SO_REUSEPORT spread them).
relay_by_worker() {
  curl -s "http://127.0.0.1:$1/metrics" | awk '/^oauth_relay_requests_total\{/ { match($0, /worker="[0-9]+"/); w = substr($0, RSTART + 8, RLENGTH - 9); n[w] += $NF }
    END { for (w in n) printf "worker %s: %d  ", w, n[w] }'
}
tokens_issued() { curl -s "http://127.0.0.1:$IDP/count" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])'; }

# The upstream's and the relays' TLS settings, when SCHEME=https.
UPSTREAM_TLS=""; NGINX_TLS=""; HAPROXY_TLS=""; H2O_TLS=""; RELAY_TLS=""
if [ "$SCHEME" = https ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout $W/ca.key -out $W/ca.pem -days 1 -subj "/CN=bench CA" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout $W/up.key -out $W/up.csr -subj "/CN=localhost" 2>/dev/null
  printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" >$W/ext
  openssl x509 -req -in $W/up.csr -CA $W/ca.pem -CAkey $W/ca.key -CAcreateserial -out $W/up.pem -days 1 -extfile $W/ext 2>/dev/null
  UPSTREAM_TLS="ssl; ssl_certificate $W/up.pem; ssl_certificate_key $W/up.key; ssl_session_cache shared:S:1m"
  NGINX_TLS="proxy_ssl_trusted_certificate $W/ca.pem; proxy_ssl_verify on; proxy_ssl_name localhost; proxy_ssl_session_reuse on;"
  HAPROXY_TLS="ssl verify required ca-file $W/ca.pem"
  H2O_TLS="proxy.ssl.verify-peer: ON
        proxy.ssl.cafile: $W/ca.pem"
  RELAY_TLS=", \"tls\": { \"caFile\": \"$W/ca.pem\" }"
fi
cat >$W/up.conf <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections $(ulimit -n); }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP ${UPSTREAM_TLS:+$UPSTREAM_TLS}; location / { return 200 "hello from upstream\n"; } } }
NG
taskset -c "$PROXY_CPUS" nginx -c $W/up.conf & PIDS+=($!)
python3 bench/token_issuer.py $IDP & PIDS+=($!)
wait_port $UP; wait_port $IDP

write_configs() { # peer workers, relay workers
  cat >$W/nginx.conf <<NG
worker_processes $1; daemon off; pid $W/px.pid; error_log $W/px.err;
events { worker_connections 16384; }
http { access_log off; keepalive_requests 1000000;
  upstream u { server 127.0.0.1:$UP; keepalive 128; }
  server { listen 127.0.0.1:${PORT[nginx]} reuseport; location / { proxy_pass $SCHEME://u; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_set_header Authorization "$TOKEN"; $NGINX_TLS } } }
NG
  cat >$W/haproxy.cfg <<HA
global
  maxconn $HAPROXY_MAXCONN
  nbthread $1
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 30s
  option http-keep-alive
frontend f
  bind 127.0.0.1:${PORT[haproxy]}
  http-request set-header Authorization "$TOKEN"
  default_backend b
backend b
  http-reuse always
  server s1 127.0.0.1:$UP $HAPROXY_TLS
HA
  cat >$W/h2o.conf <<H2
num-threads: $1
max-connections: 20000
http1-request-timeout: 60
error-log: $W/h2o.err
listen: { host: 127.0.0.1, port: ${PORT[h2o]} }
hosts:
  default:
    paths:
      /:
        proxy.reverse.url: $SCHEME://127.0.0.1:$UP/
        proxy.preserve-host: ON
        proxy.header.set: "Authorization: $TOKEN"
        $H2O_TLS
H2
  local name admin
  for name in relay relay-static relay-5s baseline; do
    admin="\"127.0.0.1:$((ADMIN_BASE + ${PORT[$name]} - ${PORT[relay]}))\", \"metrics\": $([ "$METRICS" = 1 ] && echo true || echo false)"
    case $name in
      relay-static) credential="\"setHeaders\": { \"Authorization\": \"$TOKEN\" }"; identities="" ;;
      *) ttl=$([ $name = relay-5s ] && echo 5 || echo 3600); credential="\"identity\": \"bench\""
         identities="\"identities\": { \"bench\": { \"tokenUrl\": \"http://127.0.0.1:$IDP/token?ttl=$ttl\", \"clientId\": \"bench\", \"clientSecret\": \"bench-secret\" } }," ;;
    esac
    cat >$W/$name.json <<JS
{ "listen": "127.0.0.1:${PORT[$name]}", "admin": $admin, "workers": $2, "accessLog": false,
  "limits": { "maxConnections": $(( $(ulimit -n) - 1000 )) }, $identities
  "routes": [ { "match": { "pathPrefix": "/" }, "upstream": "$SCHEME://127.0.0.1:$UP", $credential$RELAY_TLS } ] }
JS
  done
}

declare -A PID
start_proxy() { # name (taskset execs the proxy: $! is the proxy's own PID)
  local pin=(taskset -c "$PROXY_CPUS")
  case $1 in
    nginx) "${pin[@]}" nginx -c $W/nginx.conf & ;;
    haproxy) "${pin[@]}" haproxy -f $W/haproxy.cfg -db >$W/haproxy.out 2>&1 & ;;
    h2o) "${pin[@]}" h2o -c $W/h2o.conf >$W/h2o.out 2>&1 & ;;
    relay*) "${pin[@]}" "$RELAY" run --config $W/$1.json --log-level warning 2>$W/$1.err & ;;
    baseline) "${pin[@]}" "$BASELINE_BIN" run --config $W/$1.json --log-level warning 2>$W/$1.err & ;;
  esac
  PID[$1]=$!; PIDS+=($!)
  wait_port "${PORT[$1]}"
  sleep 0.5
  curl -fsS -o /dev/null "http://127.0.0.1:${PORT[$1]}/" || { echo "$1 does not answer" >&2; exit 1; }
  echo "rss $1 $(rss_kib ${PID[$1]})" >>$W/raw
}
stop_proxy() { kill "${PID[$1]}" 2>/dev/null || true; wait "${PID[$1]}" 2>/dev/null || true; }

measure() { # round name
  local name=$2 out u0 s0 u1 s1 requests
  read -r u0 s0 < <(cpu_ticks ${PID[$name]})
  out=$("${WRK[@]}" -t1 -c"$C" -d"${D}s" --latency "http://127.0.0.1:${PORT[$name]}/" 2>&1)
  read -r u1 s1 < <(cpu_ticks ${PID[$name]})
  requests=$(awk '/requests in/{print $1}' <<<"$out")
  echo "$requests" >>$W/$name.count
  awk -v r="$1" -v n="$name" -v rps="$(awk '/Requests\/sec/{print $2}' <<<"$out")" \
      -v p50="$(to_us "$(awk '$1=="50%"{print $2}' <<<"$out")")" -v p99="$(to_us "$(awk '$1=="99%"{print $2}' <<<"$out")")" \
      -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" -v q="$requests" \
      -v bad="$(awk '/Non-2xx/{print $NF}' <<<"$out")" \
      'BEGIN { printf "run %s %s %s %s %s %.2f %.2f %d\n", r, n, rps, p50, p99, (u + s) / hz * 1e6 / q, u / hz * 1e6 / q, bad + 0 }' >>$W/raw
  awk '/Socket errors/' <<<"$out" | sed "s/^/  $name: /" >&2
}

NAMES=($RELAYS $PEERS)
echo "oauth-relay bench: $SCHEME upstream, ${D}s runs, $C connections, $ROUNDS rounds, wrk -t1$([ "$PIN" = 1 ] && echo " on CPU 0, the rest on CPUs $PROXY_CPUS"), $CORES cores"
echo "$(date -u +%FT%TZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
first_workers=${WORKERS_LIST%% *}
for workers in $WORKERS_LIST; do
  peer_workers=$workers; [ "$workers" = 0 ] && peer_workers=$CORES
  echo
  echo "workers: relay $workers$([ "$workers" = 0 ] && echo " (one per core)"), nginx $peer_workers, HAProxy $peer_workers threads, h2o $peer_workers threads"
  write_configs "$peer_workers" "$workers"
  : >$W/raw; rm -f $W/*.count
  for name in "${NAMES[@]}"; do start_proxy $name; done
  for name in "${NAMES[@]}"; do "${WRK[@]}" -t1 -c"$C" -d1s "http://127.0.0.1:${PORT[$name]}/" >/dev/null 2>&1 || true; done  # warm-up
  declare -A counted_before=()
  if [ "$METRICS" = 1 ]; then
    for name in $RELAYS; do counted_before[$name]=$(relay_counted $((ADMIN_BASE + ${PORT[$name]} - ${PORT[relay]}))); done
  fi
  tokens_before=$(tokens_issued)
  order=("${NAMES[@]}")
  for round in $(seq "$ROUNDS"); do
    for name in "${order[@]}"; do measure "$round" "$name"; done
    order=("${order[@]:1}" "${order[0]}")
  done
  tokens_after=$(tokens_issued)
  if [ "$METRICS" = 1 ]; then
    for name in $RELAYS; do
      counted=$(( $(relay_counted $((ADMIN_BASE + ${PORT[$name]} - ${PORT[relay]}))) - counted_before[$name] ))
      sent=$(awk '{s+=$1} END{print s}' $W/$name.count)
      echo "  $name: metrics counted $counted requests, wrk completed $sent (wrk does not count those in flight when a run stops)"
      [ "$workers" = 1 ] || echo "  $name: requests by worker since start: $(relay_by_worker $((ADMIN_BASE + ${PORT[$name]} - ${PORT[relay]})))"
    done
  fi
  echo "  token requests during the runs: $((tokens_after - tokens_before))"
  if [ "$IDLE_CONNECTIONS" -gt 0 ] && [ "$workers" = "$first_workers" ]; then
    for mode in $IDLE_MODES; do
      for name in "${NAMES[@]}"; do
        if [ "$mode" = burst ]; then
          # A fresh process, warmed up as for the runs: what the sequential measure freed must not
          # serve the burst.
          stop_proxy $name; start_proxy $name >/dev/null
          "${WRK[@]}" -t1 -c"$C" -d1s "http://127.0.0.1:${PORT[$name]}/" >/dev/null 2>&1 || true
        fi
        read -r answered held _ _ per upstream _ < <(python3 bench/idle_connections.py $([ "$mode" = burst ] && echo --burst) \
                                              --upstream-port $UP 127.0.0.1 "${PORT[$name]}" "$IDLE_CONNECTIONS" "${PID[$name]}" \
                                              | sed 's/[a-z_]*=//g')
        echo "idle $name $per $answered $IDLE_CONNECTIONS $mode $upstream $held" >>$W/raw
      done
    done
  fi
  for name in "${NAMES[@]}"; do stop_proxy $name; done
  python3 bench/summarize.py $W/raw
done
