#!/usr/bin/env bash
# What tokens per caller (`subjectTokenFrom: "caller"`) cost, beside an identity's own token:
#  1. instructions per request on a cache hit, counted by callgrind like
#     bench/instructions-per-request.sh: the same sequential keep-alive GETs to nginx, each with an
#     `Authorization: Bearer` caller token of CALLER_BYTES (default 900, a typical JWT), through a
#     route whose identity has its own token and through one that exchanges the caller's (one
#     caller: after the first request, every lookup is a hit);
#  2. memory per cached caller: the relay's RSS (VmRSS) after ENTRIES callers (default 20000) each
#     exchanged once for a token of TOKEN_BYTES (default 1000), less its RSS after 1000 of them,
#     over the callers between.
#
#   bench/caller-tokens.sh [N]          N = 2000 requests (callgrind runs of N and 3N)
#
# Needs: valgrind, nginx, python3; the release binary (OAUTH_RELAY_BIN to choose another).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
CALLER_BYTES=${CALLER_BYTES:-900}
ENTRIES=${ENTRIES:-20000}
TOKEN_BYTES=${TOKEN_BYTES:-1000}
RELAY=${OAUTH_RELAY_BIN:-$PWD/.build/release/oauth-relay}
W=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
UP=$(free_port); IDP=$(free_port)
cat >"$W/up.conf" <<NG
worker_processes 1; daemon off; pid $W/up.pid; error_log $W/up.err;
events { worker_connections 64; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP; location / { return 200 "hello from upstream\n"; } } }
NG
nginx -c "$W/up.conf" & PIDS+=($!)
python3 bench/token_issuer.py "$IDP" & PIDS+=($!)

# A relay config on `port` whose route's identity is `kind`: own (its own token) or caller.
config() {
  local port=$1 kind=$2 file="$W/relay-$2.json"
  local identity="\"tokenUrl\": \"http://127.0.0.1:$IDP/token?bytes=$TOKEN_BYTES\", \"clientId\": \"bench\", \"clientSecret\": \"bench-secret\""
  if [ "$kind" = caller ]; then
    identity="$identity, \"grant\": \"urn:ietf:params:oauth:grant-type:token-exchange\", \"subjectTokenFrom\": \"caller\", \"maxCallers\": $((ENTRIES + 1000))"
  fi
  cat >"$file" <<JS
{ "listen": "127.0.0.1:$port", "admin": null, "workers": 1, "accessLog": false,
  "identities": { "bench": { $identity } },
  "routes": [ { "match": { "pathPrefix": "/" }, "upstream": "http://127.0.0.1:$UP", "identity": "bench" } ] }
JS
  echo "$file"
}

# Sends `count` GETs one after another on one connection, from `callers` distinct caller tokens
# (1: the same token every time); with a pid, prints that process's VmRSS (KiB) after `mark`
# requests and at the end.
send() {
  python3 - "$@" <<'PY'
import secrets, socket, sys, time
port, count, callers, caller_bytes = (int(a) for a in sys.argv[1:5])
pid, mark = (int(sys.argv[5]), int(sys.argv[6])) if len(sys.argv) > 6 else (None, None)
def rss():
    return next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:"))
deadline = time.time() + 120
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30); break
    except OSError:
        if time.time() > deadline: raise
        time.sleep(0.2)
prefix = secrets.token_urlsafe(caller_bytes)[:caller_bytes - 8]
buffer = b""
for index in range(count):
    caller = f"{prefix}{index % callers:08d}"
    s.sendall(f"GET /bench HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: bench\r\nAccept: */*\r\n"
              f"Authorization: Bearer {caller}\r\n\r\n".encode())
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            head = buffer[:end].decode("latin-1")
            assert head.startswith("HTTP/1.1 200"), head
            length = int(next(l.split(":")[1] for l in head.split("\r\n") if l.lower().startswith("content-length")))
            if len(buffer) >= end + 4 + length:
                buffer = buffer[end + 4 + length:]
                break
        chunk = s.recv(65536)
        assert chunk, "the relay closed the connection"
        buffer += chunk
    if pid and index + 1 == mark:
        print(rss())
s.close()
if pid:
    print(rss())
PY
}

# Total instructions of a relay run of config `$1` serving `$2` requests of one caller.
run() {
  local port=$(free_port) bin="$W/relay-$RANDOM" out="$W/callgrind.$RANDOM"
  local file=$(config "$port" "$1")
  cp "$RELAY" "$bin" && strip --strip-debug "$bin"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" run --config "$file" --log-level error 2>"$W/valgrind.log" &
  local pid=$!
  send "$port" "$2" 1 "$CALLER_BYTES"
  kill -TERM $pid; wait $pid || true
  awk '/^summary:/ {print $2}' "$out"
}

measure() {
  local small large
  small=$(run "$1" "$N"); large=$(run "$1" $((3 * N)))
  echo "$(( (large - small) / (2 * N) ))"
}

own=$(measure own); caller=$(measure caller)
printf 'instructions per request: own token %s, token per caller (cache hit, %s-byte caller token) %s (+%s)\n' \
  "$own" "$CALLER_BYTES" "$caller" "$((caller - own))"

port=$(free_port)
"$RELAY" run --config "$(config "$port" caller)" --log-level error 2>"$W/relay.log" & PIDS+=($!)
rss=($(send "$port" "$ENTRIES" "$ENTRIES" "$CALLER_BYTES" "${PIDS[-1]}" 1000))
before=${rss[0]} after=${rss[1]}
printf 'memory per cached caller (%s-byte tokens): %s bytes (RSS %s KiB after 1000 callers, %s KiB after %s)\n' \
  "$TOKEN_BYTES" "$(( (after - before) * 1024 / (ENTRIES - 1000) ))" "$before" "$after" "$ENTRIES"
