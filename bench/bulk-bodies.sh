#!/usr/bin/env bash
# Large bodies through each proxy on loopback, side by side: SIZE_GIB (default 1) GiB downloaded
# (GET of a sparse file from an nginx upstream, sendfile), uploaded with Content-Length
# (curl -T FILE -X POST) and uploaded chunked (curl -T - from stdin), the uploads to
# bench/body_sink.py, which reads each body to its end before it answers with the byte count it
# got (checked: exactly the size sent). curl is the client (Expect off, --max-time bounded). Each
# transfer kind runs against a plain upstream and against a TLS upstream (SCHEMES): the same nginx
# serving TLS for downloads, body_sink.py speaking TLS for uploads, a CA the run generates, and every
# proxy verifies the upstream's certificate. Every proxy streams both ways, with no disk:
#   relay    the release build (OAUTH_RELAY_BIN, default .build/release/oauth-relay), one worker, a
#            configuration this script writes: four routes, the token as a static `setHeaders`
#            like the peers' (so no token endpoint runs), metrics on as deployed
#   baseline BASELINE_BIN, configured like relay: an earlier build in the same rounds (before/after)
#   nginx    client_max_body_size 0; proxy_request_buffering off; proxy_buffering off; HTTP/1.1 +
#            upstream keepalive; buffer sizes its defaults on x86-64 (proxy_buffer_size one page,
#            4 KiB; client_body_buffer_size two pages, 8 KiB): it moves a body 4 KiB (down) / 8 KiB
#            (up) at a time
#   nginx64k the same with proxy_buffer_size and client_body_buffer_size 64k: the relay's read size
#   haproxy  defaults (it streams; no http-buffer-request; no splicing unless told), http-reuse always
#   haproxy-splice (not in the default PEERS) the same with `option splice-request` and
#            `option splice-response`: plain bodies move by splice(2) through a pipe, never copied
#            to user space (TLS ones cannot)
#   project  PROXY_CMD, if set, instead of relay: listens on 127.0.0.1:17210 with the routes below
# Routes (each proxy): /upload -> http://127.0.0.1:17202 (sink), /tls/upload -> https://127.0.0.1:17204
# (sink), /tls/ -> https://127.0.0.1:17203 (nginx), / -> http://127.0.0.1:17201 (nginx).
# h2o 2.2.5 is left out: its proxy holds a request body instead of streaming it (its RSS reached
# 970 MiB during a 1 GiB upload, 2026-11-26), and it reads an upstream response with no back-pressure.
#
# Per round, scheme, transfer kind and proxy (rotated order): a fresh proxy process, warmed with a
# small GET and POST, then one transfer; CPU seconds of the proxy's process tree (utime+stime from
# /proc) per GiB and its user part; peak RSS growth (VmHWM after, reset by clear_refs before, less
# VmRSS before, summed over the tree), and the largest VmRSS growth seen by a sampler reading
# /proc every 100 ms (on CPU 0) during the transfer (a check on the peak); wall time (curl's time_total).
# Medians and min-max, and each relay's ratios to every peer per round (min-max).
# PIN=1 (default) puts the proxy on CPU 1 and curl and the upstreams on CPU 0: unpinned, where the
# kernel charges loopback receive work (the proxy's stime or softirq time) swings with scheduling,
# and single-transfer ratios spread about twice as wide. One 1 GiB transfer varies 20-50% on a
# shared machine: use 5 rounds or more, and read the per-round spread before the medians.
#
# Usage: [SCHEMES="http https"] [KINDS="down up upchunked"] [PEERS="nginx nginx64k haproxy haproxy-splice"]
#        [SIZE_GIB=1] [PIN=0] [OAUTH_RELAY_BIN=…] [BASELINE_BIN=…] [PROXY_CMD="…"] bench/bulk-bodies.sh [rounds]
# Default run (5 rounds, both schemes, 4 proxies, 1 GiB): 120 transfers of 2-4 s each plus a proxy
# start per transfer, under 10 minutes on a quiet 2-core VM; on 2026-11-27, with other builds
# loading the machine to 20, a transfer took 10-15 s and 75 transfers 30 minutes. SIZE_GIB=4
# checks that RSS stays bounded whatever the size (4x longer per transfer).
# Needs: nginx haproxy curl python3 openssl (scripts/install-deps --test) and a release build.
set -u
cd "$(dirname "$0")/.."
R=${1:-5}
PIN=${PIN:-1}
SCHEMES=${SCHEMES:-"http https"}
KINDS=${KINDS:-"down up upchunked"}
SIZE_GIB=${SIZE_GIB:-1}
RELAY=${OAUTH_RELAY_BIN:-.build/release/oauth-relay}
BASELINE_BIN=${BASELINE_BIN:-}
P=(); C0=()
if [ "$PIN" = 1 ] && [ "$(nproc)" -ge 2 ]; then P=(taskset -c 1); C0=(taskset -c 0); fi
AUTH="Bearer abcdefghijklmnopqrstuvwxyz0123456789"
W=$(mktemp -d -p /dev/shm bulk.XXXXXX); PIDS=(); SAMPLER=""
cleanup() { [ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
for t in nginx haproxy curl python3 openssl; do command -v $t >/dev/null || { echo "missing $t" >&2; exit 2; }; done
if [ -z "${PROXY_CMD:-}" ]; then [ -x "$RELAY" ] || { echo "missing $RELAY: swift build -c release --product oauth-relay" >&2; exit 2; }; fi
[ -z "$BASELINE_BIN" ] || [ -x "$BASELINE_BIN" ] || { echo "BASELINE_BIN $BASELINE_BIN is not executable" >&2; exit 2; }
SIZE=$((SIZE_GIB * 1073741824))
chmod 755 $W; mkdir $W/tls; chmod 755 $W/tls
truncate -s $SIZE $W/big; ln $W/big $W/tls/big; echo hello >$W/small; cp $W/small $W/tls/small; chmod 644 $W/big $W/small $W/tls/small

# The TLS upstreams' certificate, from a CA the run makes (P-256, SAN 127.0.0.1 and localhost).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $W/ca.key -out $W/ca.pem -days 1 -subj "/CN=bulk CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $W/up.key -out $W/up.csr -subj "/CN=localhost" 2>/dev/null
printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" >$W/ext
openssl x509 -req -in $W/up.csr -CA $W/ca.pem -CAkey $W/ca.key -CAcreateserial -out $W/up.pem -days 1 -extfile $W/ext 2>/dev/null
chmod 644 $W/up.key

cat >$W/up.conf <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections 1024; }
http { access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;
  server { listen 127.0.0.1:17201; root $W; location / { } }
  server { listen 127.0.0.1:17203 ssl; ssl_certificate $W/up.pem; ssl_certificate_key $W/up.key;
    ssl_protocols TLSv1.3; root $W; location / { } } }
NG
NGINX_TLS="proxy_ssl_trusted_certificate $W/ca.pem; proxy_ssl_verify on; proxy_ssl_name localhost; proxy_ssl_session_reuse on; proxy_ssl_protocols TLSv1.3;"
nginx_conf() { # port extra-directives
cat <<NG
worker_processes 1; daemon off; pid $W/px$1.pid; error_log $W/px$1.err;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 1000000;
  upstream dl { server 127.0.0.1:17201; keepalive 16; }
  upstream ul { server 127.0.0.1:17202; keepalive 16; }
  upstream tdl { server 127.0.0.1:17203; keepalive 16; }
  upstream tul { server 127.0.0.1:17204; keepalive 16; }
  server { listen 127.0.0.1:$1;
    client_max_body_size 0; proxy_request_buffering off; proxy_buffering off; $2
    proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Authorization "$AUTH";
    location / { proxy_pass http://dl; }
    location /upload { proxy_pass http://ul; }
    location /tls/ { proxy_pass https://tdl; $NGINX_TLS }
    location /tls/upload { proxy_pass https://tul; $NGINX_TLS } } }
NG
}
nginx_conf 17211 "" >$W/px.conf
nginx_conf 17214 "proxy_buffer_size 64k; proxy_buffers 4 64k; client_body_buffer_size 64k;" >$W/px64.conf
HAPROXY_TLS="ssl verify required ca-file $W/ca.pem ssl-min-ver TLSv1.3"
cat >$W/hap.cfg <<HA
global
  maxconn 1000
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
frontend f
  bind 127.0.0.1:17212
  http-request set-header Authorization "$AUTH"
  use_backend tul if { path_beg /tls/upload }
  use_backend tdl if { path_beg /tls/ }
  use_backend ul if { path_beg /upload }
  default_backend dl
backend dl
  http-reuse always
  server s1 127.0.0.1:17201
backend ul
  http-reuse always
  server s1 127.0.0.1:17202
backend tdl
  http-reuse always
  server s1 127.0.0.1:17203 $HAPROXY_TLS
backend tul
  http-reuse always
  server s1 127.0.0.1:17204 $HAPROXY_TLS
HA
# The same HAProxy forced to splice(2) body bytes between plain sockets (not its default): what
# a proxy gains by moving them kernel-side, pipe in between, instead of read(2) + write(2).
sed -e 's/bind 127.0.0.1:17212/bind 127.0.0.1:17213/' -e 's/^  option http-keep-alive/  option http-keep-alive\n  option splice-request\n  option splice-response/' \
  $W/hap.cfg >$W/hap-splice.cfg
relay_conf() { # port admin-port
cat <<JS
{ "listen": "127.0.0.1:$1", "admin": "127.0.0.1:$2", "metrics": true, "workers": 1, "accessLog": false,
  "routes": [
    { "match": { "pathPrefix": "/tls/upload" }, "upstream": "https://127.0.0.1:17204", "tls": { "caFile": "$W/ca.pem" },
      "setHeaders": { "Authorization": "$AUTH" } },
    { "match": { "pathPrefix": "/tls/" }, "upstream": "https://127.0.0.1:17203", "tls": { "caFile": "$W/ca.pem" },
      "setHeaders": { "Authorization": "$AUTH" } },
    { "match": { "pathPrefix": "/upload" }, "upstream": "http://127.0.0.1:17202", "setHeaders": { "Authorization": "$AUTH" } },
    { "match": { "pathPrefix": "/" }, "upstream": "http://127.0.0.1:17201", "setHeaders": { "Authorization": "$AUTH" } } ] }
JS
}
relay_conf 17210 17220 >$W/relay.json
relay_conf 17215 17225 >$W/baseline.json
"${C0[@]}" nginx -c $W/up.conf & PIDS+=($!)
"${C0[@]}" python3 bench/body_sink.py 17202 & PIDS+=($!)
"${C0[@]}" python3 bench/body_sink.py 17204 $W/up.pem $W/up.key & PIDS+=($!)
declare -A PORT=( [nginx]=17211 [nginx64k]=17214 [haproxy]=17212 [haproxy-splice]=17213 [relay]=17210 [project]=17210 [baseline]=17215 )
NAMES=(${PEERS:-nginx nginx64k haproxy})
if [ -n "${PROXY_CMD:-}" ]; then NAMES+=(project); else NAMES+=(relay); fi
[ -z "$BASELINE_BIN" ] || NAMES+=(baseline)
wait_port() { local i; for i in $(seq 1 100); do (echo >/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
for p in 17201 17202 17203 17204; do wait_port $p || { echo "upstream $p did not start" >&2; exit 1; }; done
start() { # name -> PID
  case $1 in
    nginx) "${P[@]}" nginx -c $W/px.conf & ;;
    nginx64k) "${P[@]}" nginx -c $W/px64.conf & ;;
    haproxy) "${P[@]}" haproxy -f $W/hap.cfg -db >>$W/hap.out 2>&1 & ;;
    haproxy-splice) "${P[@]}" haproxy -f $W/hap-splice.cfg -db >>$W/hap.out 2>&1 & ;;
    relay) "${P[@]}" "$RELAY" run --config $W/relay.json --log-level warning 2>>$W/relay.err & ;;
    baseline) "${P[@]}" "$BASELINE_BIN" run --config $W/baseline.json --log-level warning 2>>$W/baseline.err & ;;
    project) "${P[@]}" bash -c "$PROXY_CMD" & ;;
  esac
  PID=$!; PIDS+=($PID)
  wait_port ${PORT[$1]} || { echo "$1 did not start" >&2; return 1; }
  local i a b c d u=http://127.0.0.1:${PORT[$1]}
  for i in $(seq 1 20); do # warm: the small file and a small upload, plain and TLS (a relay may still be starting)
    a=$(curl -s -m 5 $u/small); b=$(curl -s -m 5 -H 'Expect:' --data-binary hello $u/upload)
    c=$(curl -s -m 5 $u/tls/small); d=$(curl -s -m 5 -H 'Expect:' --data-binary hello $u/tls/upload)
    [ "$a $b $c $d" = "hello 5 cl hello 5 cl" ] && return 0
    sleep 0.5; done
  echo "$1 does not proxy: GET /small gave '$a', POST /upload '$b', GET /tls/small '$c', POST /tls/upload '$d'" >&2
  [ ${1%-splice} = haproxy ] && cat $W/hap.out >&2; return 1
}
stop() { kill $1 2>/dev/null; local i; for i in $(seq 1 50); do kill -0 $1 2>/dev/null || break; sleep 0.1; done; kill -9 $1 2>/dev/null; wait $1 2>/dev/null; }
tree_pids() { local p=$1; echo $p; for c in $(pgrep -P $p); do tree_pids $c; done; }
cpu_ticks() { local u=0 s=0; for p in $(tree_pids $1); do [ -r /proc/$p/stat ] || continue
    read -r a b < <(awk '{print $14, $15}' /proc/$p/stat); u=$((u + a)); s=$((s + b)); done; echo $u $s; }
kib_of() { awk -v f="$1:" '$1 == f { v = $2 } END { print v + 0 }' $2 2>/dev/null || echo 0; } # field file (a process gone: 0)
rss_total() { local p t=0; for p in $(tree_pids $1); do t=$((t + $(kib_of VmRSS /proc/$p/status))); done; echo $t; }
rss_mark() { # pid: remember VmRSS per process, reset each peak
  local p; : >$W/rss0; for p in $(tree_pids $1); do
    echo "$p $(kib_of VmRSS /proc/$p/status)" >>$W/rss0; echo 5 >/proc/$p/clear_refs || return 1; done; }
rss_growth() { # KiB: sum over the processes of peak after - RSS before
  local p r0 t=0; while read -r p r0; do t=$((t + $(kib_of VmHWM /proc/$p/status) - r0)); done <$W/rss0; echo $t; }
sample_rss() { # pid: the largest VmRSS of the tree every 100 ms, into $W/sampled, until killed
  local max=0 r; while kill -0 $1 2>/dev/null; do r=$(rss_total $1); [ $r -gt $max ] && { max=$r; echo $max >$W/sampled; }; sleep 0.1; done; }
transfer() { # kind base-url -> "bytes seconds status check"
  local u=$2; echo none >$W/ans
  case $1 in
    down) "${C0[@]}" curl -s -o /dev/null -m $((120 * SIZE_GIB)) -w '%{size_download} %{time_total} %{http_code} -' $u/big ;;
    up) "${C0[@]}" curl -s -o $W/ans -m $((120 * SIZE_GIB)) -H 'Expect:' -X POST -T $W/big -w '%{size_upload} %{time_total} %{http_code} ' $u/upload
        tr ' ' : <$W/ans ;;
    upchunked) "${C0[@]}" curl -s -o $W/ans -m $((120 * SIZE_GIB)) -H 'Expect:' -H 'Transfer-Encoding: chunked' -X POST -T - \
          -w '%{size_upload} %{time_total} %{http_code} ' $u/upload <$W/big
        tr ' ' : <$W/ans ;;
  esac
}
HZ=$(getconf CLK_TCK)
echo "$SIZE_GIB GiB per transfer via curl, loopback, $R rounds, upstreams: $SCHEMES, one proxy process at a time (1 worker/thread), $(nproc) cores$([ ${#P[@]} = 0 ] || echo ", the proxy on CPU 1, curl and the upstreams on CPU 0")"
echo "$(date -u +%FT%TZ), load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 $R); do
  n=${#NAMES[@]}
  for scheme in $SCHEMES; do
    for kind in $KINDS; do
      for i in $(seq 0 $((n-1))); do
        name=${NAMES[$(( (i + r) % n ))]}
        start $name || exit 1
        sleep 0.3
        rss_mark $PID || { echo "cannot reset the peak RSS (clear_refs)" >&2; exit 1; }
        rss0=$(rss_total $PID); echo $rss0 >$W/sampled
        sample_rss $PID & SAMPLER=$!; [ ${#C0[@]} = 0 ] || taskset -p -c 0 $SAMPLER >/dev/null
        read -r u0 s0 < <(cpu_ticks $PID)
        base=http://127.0.0.1:${PORT[$name]}; [ $scheme = https ] && base=$base/tls
        read -r bytes secs status check < <(transfer $kind $base)
        read -r u1 s1 < <(cpu_ticks $PID)
        growth=$(rss_growth)
        kill $SAMPLER 2>/dev/null; wait $SAMPLER 2>/dev/null; SAMPLER=""
        sampled=$(( $(cat $W/sampled) - rss0 ))
        stop $PID
        ok=1; [ "$status" = 200 ] || ok=0 # curl's size_upload counts the chunk framing too: the sink's count decides
        case $kind in down) [ "$bytes" = $SIZE ] || ok=0 ;; up) [ "$check" = "$SIZE:cl" ] || ok=0 ;; upchunked) [ "$check" = "$SIZE:chunked" ] || ok=0 ;; esac
        [ $ok = 1 ] || echo "round $r $scheme $kind $name: status $status, $bytes bytes sent/received, upstream got '$check'" >&2
        echo "$r $scheme $kind $name $((u1 - u0)) $((s1 - s0)) $growth $sampled $secs $ok" >>$W/raw
      done
    done
  done
done
python3 - $W/raw $HZ $SIZE_GIB <<'PY'
import sys, statistics as st
hz = int(sys.argv[2]); gib = int(sys.argv[3]); by = {}
for l in open(sys.argv[1]):
    r, scheme, kind, name, u, s, kib, sampled, secs, ok = l.split()
    by.setdefault((scheme, kind, name), []).append(((int(u) + int(s)) / hz / gib, int(u) / hz / gib, int(kib) / 1024,
                                                    int(sampled) / 1024, float(secs), int(ok), r))
label = {"down": "download", "up": "upload, Content-Length", "upchunked": "upload, chunked"}
def mm(v, f): return f"{st.median(v):{f}} ({min(v):{f}}-{max(v):{f}})"
relays = [n for n in ("relay", "project", "baseline") if any(k[2] == n for k in by)]
for scheme in dict.fromkeys(k[0] for k in by):
    print(f"\n{scheme} upstream")
    print(f"{'transfer':23} {'proxy':14} {'cpu s/GiB (min-max)':>20} {'user':>5} {'peak RSS growth MiB (min-max)':>30} {'sampled':>7} {'wall s (min-max)':>17} {'failed':>6}")
    for (sch, kind, name), v in by.items():
        if sch != scheme: continue
        good = [x for x in v if x[5]] or v
        col = lambda i: [x[i] for x in good]
        print(f"{label[kind]:23} {name:14} {mm(col(0), '.2f'):>20} {st.median(col(1)):5.2f} {mm(col(2), '.1f'):>30} "
              f"{max(col(3)):7.1f} {mm(col(4), '.2f'):>17} {len(v) - sum(x[5] for x in v):6}")
    for mine in relays:
        for kind in label:
            ours = {x[6]: x[0] for x in by.get((scheme, kind, mine), []) if x[5]}
            if not ours: continue
            parts = []
            for (sch, k, n), v in by.items():
                if sch != scheme or k != kind or n == mine or n in relays and n != "baseline": continue
                theirs = {x[6]: x[0] for x in v if x[5]}  # the same round, side by side
                per = [ours[r] / theirs[r] for r in ours if r in theirs and theirs[r] > 0]
                if per: parts.append(f"/{n} {st.median(ours.values()) / st.median(theirs.values()):.2f} ({min(per):.2f}-{max(per):.2f})")
            print(f"{mine} {scheme} {label[kind]}: cpu/GiB " + "  ".join(parts))
PY
