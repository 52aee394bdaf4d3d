#!/usr/bin/env bash
# oauth-relay side by side with nginx, HAProxy and h2o forwarding to an HTTPS upstream, as most
# deployments do: CPU per request, its user part, p99, and the TLS handshakes each proxy makes to
# the upstream (full and resumed) per 10,000 requests.
#
#   bench/cpu-per-request-tls.sh [seconds] [connections] [rounds]   (defaults: 5 s, 64, 5)
#
# The upstream: one nginx on loopback speaking TLS 1.3 only, with a P-256 certificate for
# localhost / 127.0.0.1 from a private CA made here (so every proxy negotiates the same version,
# cipher and curve), a fixed 20-byte body. Each proxy has an upstream port of its own, and the
# upstream logs the first request of every TLS connection it accepts (`$ssl_session_reused`: "r"
# resumed, "." a full handshake; `$ssl_protocol`), so the log counts each proxy's handshakes.
# Every proxy verifies the certificate and the name against the CA, keeps upstream connections
# alive and resumes TLS sessions; the peers are configured fairly:
#   nginx    upstream keepalive 128 + keepalive_requests 1000000 (its default, 1000, reconnects
#            every 1000 requests) + keepalive_timeout 300s, proxy_ssl_verify on,
#            proxy_ssl_session_reuse on, proxy_ssl_protocols TLSv1.3 (1.22 lacks 1.3 by default)
#   HAProxy  server ... ssl verify required ca-file ... verifyhost localhost sni str(localhost),
#            http-reuse always (TLS session reuse is its default)
#   h2o      proxy.ssl.verify-peer ON, proxy.ssl.cafile, proxy.ssl.session-cache ON,
#            proxy.timeout.keepalive 300 s (its default, 2 s, empties the pool between runs)
#   relay    as deployed (an identity's token injected, from bench/token_issuer.py; metrics on),
#            a route with "tls": { "caFile", "serverName": "localhost" }, one worker; its idle
#            pool keeps 128 connections (limits.maxIdleUpstreamConnections), like nginx's keepalive
# The peers set a static Authorization header.
#
# Three kinds of run (MODES, default all three), each wrk -t1 -cCONNECTIONS -dSECONDS:
#   keepalive       keep-alive clients: the figure the targets are about
#   close           clients sending `Connection: close` (a new client connection per request); a
#                   proxy may keep its upstream connections or open one per request
#   upstream-close  the upstream closes its connection after every answer (path /close/), so
#                   every request needs a new upstream connection: the share of resumed
#                   handshakes says whether session resumption works
# Each round runs every proxy once per mode, in a rotated order; the tables show medians, the
# min–max of the CPU figure over the rounds, and the relay's ratio to each peer per round (the same
# round, side by side). CPU per request: utime+stime of the proxy's processes from /proc over the
# run, divided by the requests wrk completed.
# A default run takes about 4 × 3 × 5 × (5 s + 1 s) ≈ 6 minutes.
#
#   PEERS="nginx haproxy h2o"
#   MODES="keepalive close upstream-close"
#   OAUTH_RELAY_BIN=path      the relay (default .build/release/oauth-relay)
#   BASELINE_BIN=path         also an earlier relay build, configured the same, as "baseline"
#   PIN=1                     wrk on CPU 0, everything else on the other CPUs
#   BASE_PORT=18400           the ports used: BASE_PORT..BASE_PORT+30
# Needs: wrk nginx haproxy h2o openssl curl python3 (scripts/install-deps --test), a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-5}; C=${2:-64}; ROUNDS=${3:-5}
PEERS=${PEERS:-"nginx haproxy h2o"}
MODES=${MODES:-"keepalive close upstream-close"}
RELAY=${OAUTH_RELAY_BIN:-.build/release/oauth-relay}
BASELINE_BIN=${BASELINE_BIN:-}
PIN=${PIN:-0}
BASE=${BASE_PORT:-18400}
for t in wrk nginx haproxy h2o openssl curl python3; do command -v $t >/dev/null || { echo "missing $t: scripts/install-deps --test" >&2; exit 2; }; done
[ -x "$RELAY" ] || { echo "missing $RELAY: swift build -c release --product oauth-relay" >&2; exit 2; }
[ -z "$BASELINE_BIN" ] || [ -x "$BASELINE_BIN" ] || { echo "BASELINE_BIN $BASELINE_BIN is not executable" >&2; exit 2; }
CORES=$(nproc)
PROXY_CPUS=0-$((CORES - 1)); WRK=(wrk)
if [ "$PIN" = 1 ]; then PROXY_CPUS=1-$((CORES - 1)); WRK=(taskset -c 0 wrk); fi
TOKEN="Bearer abcdefghijklmnopqrstuvwxyz0123456789"
NAMES=(relay ${BASELINE_BIN:+baseline} $PEERS)
declare -A PORT=([relay]=$BASE [baseline]=$((BASE + 1)) [nginx]=$((BASE + 2)) [haproxy]=$((BASE + 3)) [h2o]=$((BASE + 4)))
declare -A UPPORT=([relay]=$((BASE + 10)) [baseline]=$((BASE + 11)) [nginx]=$((BASE + 12)) [haproxy]=$((BASE + 13)) [h2o]=$((BASE + 14)))
declare -A ADMIN=([relay]=$((BASE + 20)) [baseline]=$((BASE + 21)))
IDP=$((BASE + 30))
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
# Upstream TLS connections accepted so far on port $1: "full resumed".
handshakes() { awk -v p="$1" '$1 == p { if ($2 == "r") r++; else f++ } END { print f + 0, r + 0 }' $W/up-conn.log; }

# The CA and the upstream's P-256 certificate.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $W/ca.key \
  -out $W/ca.pem -days 2 -subj "/CN=bench TLS CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $W/up.key \
  -out $W/up.csr -subj "/CN=localhost" 2>/dev/null
printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" >$W/up.ext
openssl x509 -req -in $W/up.csr -CA $W/ca.pem -CAkey $W/ca.key -CAcreateserial \
  -out $W/up.pem -days 2 -extfile $W/up.ext 2>/dev/null
[ -s $W/up.pem ] || { echo "could not make the certificates" >&2; exit 2; }

listens=""; for n in "${NAMES[@]}"; do listens+="listen 127.0.0.1:${UPPORT[$n]} ssl; "; done
cat >$W/up.conf <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections 8192; }
http { keepalive_requests 1000000; keepalive_timeout 300s;
  ssl_protocols TLSv1.3; ssl_certificate $W/up.pem; ssl_certificate_key $W/up.key;
  ssl_session_cache shared:S:10m; ssl_session_timeout 1h;
  map \$connection_requests \$first { 1 1; default 0; }
  log_format conn '\$server_port \$ssl_session_reused \$ssl_protocol';
  access_log $W/up-conn.log conn buffer=64k flush=100ms if=\$first;
  server { $listens
    location / { return 200 "hello from upstream\n"; }
    location /close/ { keepalive_timeout 0; return 200 "hello from upstream\n"; } } }
NG
cat >$W/nginx.conf <<NG
worker_processes 1; daemon off; pid $W/px.pid; error_log $W/px.err;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 1000000;
  upstream u { server 127.0.0.1:${UPPORT[nginx]}; keepalive 128; keepalive_requests 1000000; keepalive_timeout 300s; }
  server { listen 127.0.0.1:${PORT[nginx]}; location / { proxy_pass https://u; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_set_header Authorization "$TOKEN";
    proxy_ssl_protocols TLSv1.3; proxy_ssl_trusted_certificate $W/ca.pem; proxy_ssl_verify on;
    proxy_ssl_name localhost; proxy_ssl_server_name on; proxy_ssl_session_reuse on; } } }
NG
cat >$W/haproxy.cfg <<HA
global
  maxconn 4000
  nbthread 1
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
  server s1 127.0.0.1:${UPPORT[haproxy]} ssl verify required ca-file $W/ca.pem verifyhost localhost sni str(localhost) ssl-min-ver TLSv1.3
HA
cat >$W/h2o.conf <<H2
num-threads: 1
max-connections: 4000
error-log: $W/h2o.err
listen: { host: 127.0.0.1, port: ${PORT[h2o]} }
hosts:
  default:
    paths:
      /:
        proxy.reverse.url: https://127.0.0.1:${UPPORT[h2o]}/
        proxy.preserve-host: ON
        proxy.header.set: "Authorization: $TOKEN"
        proxy.ssl.verify-peer: ON
        proxy.ssl.cafile: $W/ca.pem
        proxy.ssl.session-cache: ON
        proxy.timeout.keepalive: 300000
H2
for n in relay baseline; do
  cat >$W/$n.json <<JS
{ "listen": "127.0.0.1:${PORT[$n]}", "admin": "127.0.0.1:${ADMIN[$n]}", "workers": 1, "accessLog": false,
  "limits": { "maxConnections": 4000 },
  "identities": { "bench": { "tokenUrl": "http://127.0.0.1:$IDP/token", "clientId": "bench", "clientSecret": "bench-secret" } },
  "routes": [ { "match": { "pathPrefix": "/" }, "upstream": "https://127.0.0.1:${UPPORT[$n]}", "identity": "bench",
                "tls": { "caFile": "$W/ca.pem", "serverName": "localhost" } } ] }
JS
done

ulimit -n 65536 2>/dev/null || true
pin=(taskset -c "$PROXY_CPUS")
"${pin[@]}" nginx -c $W/up.conf & PIDS+=($!)
python3 bench/token_issuer.py $IDP & PIDS+=($!)
wait_port ${UPPORT[relay]}; wait_port $IDP
declare -A PID
for n in "${NAMES[@]}"; do
  case $n in
    relay) "${pin[@]}" "$RELAY" run --config $W/relay.json --log-level warning 2>$W/relay.err & ;;
    baseline) "${pin[@]}" "$BASELINE_BIN" run --config $W/baseline.json --log-level warning 2>$W/baseline.err & ;;
    nginx) "${pin[@]}" nginx -c $W/nginx.conf & ;;
    haproxy) "${pin[@]}" haproxy -f $W/haproxy.cfg -db >$W/haproxy.out 2>&1 & ;;
    h2o) "${pin[@]}" h2o -c $W/h2o.conf >$W/h2o.out 2>&1 & ;;
    *) echo "unknown peer $n" >&2; exit 2 ;;
  esac
  PID[$n]=$!; PIDS+=($!)
done
for n in "${NAMES[@]}"; do
  wait_port ${PORT[$n]}
  status=""
  for _ in $(seq 40); do # up to 10 s: a relay fetches its token first
    status=$(curl -s -o $W/check -w '%{http_code}' -m 5 "http://127.0.0.1:${PORT[$n]}/" || true)
    [ "$status" = 200 ] && grep -q "hello from upstream" $W/check && break; sleep 0.25
  done
  [ "$status" = 200 ] || { echo "$n does not proxy to the https upstream (status $status)" >&2; cat $W/*.err $W/*.out 2>/dev/null >&2; exit 1; }
done
sleep 0.2 # the upstream's log buffer (flush=100ms)
if grep -v TLSv1.3 $W/up-conn.log >&2; then echo "a proxy did not speak TLS 1.3 to the upstream" >&2; exit 1; fi
for n in "${NAMES[@]}"; do "${WRK[@]}" -t1 -c"$C" -d1s "http://127.0.0.1:${PORT[$n]}/" >/dev/null 2>&1 || true; done # warm-up

measure() { # round mode name
  local round=$1 mode=$2 name=$3 path=/ header=() out u0 s0 u1 s1 f0 r0 f1 r1
  [ "$mode" = upstream-close ] && path=/close/
  [ "$mode" = close ] && header=(-H "Connection: close")
  sleep 0.2; read -r f0 r0 < <(handshakes ${UPPORT[$name]})
  read -r u0 s0 < <(cpu_ticks ${PID[$name]})
  out=$(timeout $((D + 30)) "${WRK[@]}" -t1 -c"$C" -d"${D}s" --latency "${header[@]}" "http://127.0.0.1:${PORT[$name]}$path" 2>&1 || true)
  read -r u1 s1 < <(cpu_ticks ${PID[$name]})
  sleep 0.2; read -r f1 r1 < <(handshakes ${UPPORT[$name]})
  WRK_OUT=$out python3 - "$round" "$mode" "$name" "$((u1 - u0))" "$((s1 - s0))" "$(getconf CLK_TCK)" "$((f1 - f0))" "$((r1 - r0))" <<'PY' >>$W/raw
import os, re, sys
round, mode, name, u, s, hz, full, resumed = sys.argv[1:]
out = os.environ["WRK_OUT"]
requests = re.search(r"(\d+) requests in", out)
rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
if not (requests and rps and p99) or int(requests.group(1)) == 0:
    sys.stderr.write(f"round {round} {mode} {name}: wrk gave no figures\n{out}\n"); sys.exit(0)
q = int(requests.group(1))
p99_ms = float(p99.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[p99.group(2)]
us = lambda ticks: int(ticks) / int(hz) * 1e6 / q
print(round, mode, name, q, rps.group(1), f"{p99_ms:.3f}", f"{us(u) + us(s):.2f}", f"{us(u):.2f}",
      bad.group(1) if bad else 0, full, resumed)
PY
  grep -h "Socket errors" <<<"$out" | sed "s/^/  round $round $mode $name: /" >&2 || true
}

echo "oauth-relay bench: https upstream (TLS 1.3, P-256, verified), ${D}s runs, $C connections, $ROUNDS rounds, wrk -t1$([ "$PIN" = 1 ] && echo " on CPU 0, the rest on CPUs $PROXY_CPUS"), one worker each, $CORES cores"
echo "$(date -u +%FT%TZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
: >$W/raw
order=("${NAMES[@]}")
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    for name in "${order[@]}"; do measure "$round" "$mode" "$name"; done
  done
  order=("${order[@]:1}" "${order[0]}")
done
echo "load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -s $W/raw ] || { echo "no measurements" >&2; exit 1; }
python3 - $W/raw <<'PY'
import statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    r, mode, name, q, rps, p99, cpu, user, bad, full, resumed = line.split()
    rows.setdefault(mode, {}).setdefault(name, []).append(
        dict(round=r, q=int(q), rps=float(rps), p99=float(p99), cpu=float(cpu), user=float(user),
             bad=int(bad), full=int(full), resumed=int(resumed)))
titles = {"keepalive": "keep-alive clients", "close": "clients sending `Connection: close`",
          "upstream-close": "the upstream closes every connection (each request a new upstream connection)"}
for mode, by in rows.items():
    print(f"\n{titles.get(mode, mode)}\n")
    print("| proxy | requests/s | p99 ms | CPU µs/request (min–max) | of it user | upstream handshakes per 10,000 requests: full + resumed | non-2xx |")
    print("|---|---|---|---|---|---|---|")
    med = {}
    for name, v in by.items():
        m = {k: st.median(x[k] for x in v) for k in ("rps", "p99", "cpu", "user")}
        q = sum(x["q"] for x in v); full = sum(x["full"] for x in v); res = sum(x["resumed"] for x in v)
        med[name] = m
        cpus = [x["cpu"] for x in v]
        print(f"| {name} | {m['rps']:.0f} | {m['p99']:.2f} | {m['cpu']:.1f} ({min(cpus):.1f}–{max(cpus):.1f}) | "
              f"{m['user']:.1f} | {full * 1e4 / q:.2f} + {res * 1e4 / q:.2f} ({full} + {res} in {q} requests) | "
              f"{sum(x['bad'] for x in v)} |")
    for mine in ("relay", "baseline"):
        if mine not in by: continue
        for peer in by:
            if peer == mine or (mine == "baseline" and peer == "relay"): continue
            theirs = {x["round"]: x["cpu"] for x in by[peer]}
            per = [x["cpu"] / theirs[x["round"]] for x in by[mine] if x["round"] in theirs]
            if not per: continue
            a, b = med[mine], med[peer]
            print(f"{mine}/{peer}: CPU/request {a['cpu'] / b['cpu']:.2f} (per round {min(per):.2f}–{max(per):.2f}), "
                  f"user {a['user'] / b['user']:.2f}, p99 {a['p99'] / b['p99']:.2f}, requests/s {a['rps'] / b['rps']:.2f}")
PY
