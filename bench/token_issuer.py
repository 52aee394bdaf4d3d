"""A token endpoint for benchmarks only: answers every POST with a fresh opaque token whose
lifetime is the `ttl` query parameter (seconds, default 3600) and whose token_type is the `type`
query parameter (default Bearer; `DPoP` for a DPoP-bound token: the proof the relay sends is not
checked), padded to the `bytes` query parameter's length when given, and counts the requests
(GET /count). With `--jwks FILE` it also serves that JWK Set at
GET /jwks (bench/caller_tokens.py writes one): a token-exchange request is answered like any other,
so a route whose identity exchanges each caller's token can be measured. Loopback only; not an
authorization server.

    python3 bench/token_issuer.py PORT [--jwks FILE]
"""
import http.server
import json
import secrets
import sys
import threading
import urllib.parse

lock = threading.Lock()
issued = {"count": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, body: bytes):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        ttl = int(query.get("ttl", ["3600"])[0])
        with lock:
            issued["count"] += 1
        token = "bench-" + secrets.token_urlsafe(24)
        token += "p" * max(0, int(query.get("bytes", ["0"])[0]) - len(token))
        self.reply(json.dumps({"access_token": token, "token_type": query.get("type", ["Bearer"])[0],
                               "expires_in": ttl}).encode())

    def do_GET(self):
        if self.path == "/jwks" and jwks is not None:
            return self.reply(jwks)
        with lock:
            self.reply(json.dumps(issued).encode())


jwks = open(sys.argv[3], "rb").read() if len(sys.argv) > 3 and sys.argv[2] == "--jwks" else None
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
