"""`forward`: the forward-proxy listener's data path without its CA. A CONNECT to a host no route
names is tunnelled as bytes (the origin's own certificate reaches the client), refused when its
port is not allowed; `forward.proxyAuthFile` asks every request for Proxy-Authorization;
absolute-form http:// requests go on the routes only for the hosts the routes name, only to a
route whose `match.host` covers the host (never a host-less route), and to a route that adds a
credential not at all: 308 to the https:// URL, where browsers send Fetch Metadata. (Interception
through the relay's CA is tested with real clients in tests/integration/forward/, and in
Tests/ProxyTests/ForwardInterceptionTests.swift with a test leaf.)"""

import base64
import json
import os
import socket
import ssl
import subprocess
import threading

import pytest

from deadlines import scaled, wait_until
from http_client import RawConnection
from processes import Relay, RelayExited, free_port, relay_config, route


def make_origin_certificate(directory):
    """A CA and a certificate for localhost signed by it (openssl CLI): the TLS origin's."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "origin-ca.key",
        "-out", "origin-ca.pem", "-days", "1", "-subj", "/CN=forward path test origin CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "origin.key",
        "-out", "origin.csr", "-subj", "/CN=localhost")
    (directory / "ext").write_text("subjectAltName=DNS:localhost\n")
    run("x509", "-req", "-in", "origin.csr", "-CA", "origin-ca.pem", "-CAkey", "origin-ca.key", "-CAcreateserial",
        "-out", "origin.pem", "-days", "1", "-extfile", "ext")
    return directory / "origin-ca.pem", directory / "origin.pem", directory / "origin.key"


class TLSOrigin:
    """An https server on loopback that answers every request with `origin saw <target>` and
    closes: what a tunnel must carry untouched."""

    def __init__(self, cert, key):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(raw,), daemon=True).start()

    def answer(self, raw):
        raw.settimeout(scaled(10))
        try:
            with self.context.wrap_socket(raw, server_side=True) as conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(4096)
                    if not data:
                        return
                    head += data
                target = head.split(b" ")[1]
                body = b"origin saw " + target
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        except (OSError, ssl.SSLError):
            pass

    def close(self):
        self.listener.close()


@pytest.fixture
def origin(tmp_path):
    ca, cert, key = make_origin_certificate(tmp_path)
    server = TLSOrigin(cert, key)
    server.ca = ca
    yield server
    server.close()


def start_forward_relay(start_relay, upstream, tmp_path, routes=None, **forward):
    port = free_port()
    relay = start_relay(routes or [route(upstream, prefix="/")], forward={"listen": f"127.0.0.1:{port}", **forward})
    relay.forward_port = port
    wait_until(lambda: _connects(port), 10, "the forward listener")
    return relay


def _connects(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def proxied_curl(url, proxy_port, *args):
    """curl through the forward proxy; returns (exit code, the response heads and body, stderr)."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    result = subprocess.run(["curl", "-sS", "-i", "--max-time", str(scaled(15)), "-x", f"http://127.0.0.1:{proxy_port}", *args, url],
                            capture_output=True, timeout=scaled(15) + 5, env=env, stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout.decode("latin-1"), result.stderr.decode(errors="replace")


def connect(relay, target, extra=b"", headers=b""):
    conn = RawConnection("127.0.0.1", relay.forward_port)
    conn.send(b"CONNECT " + target + b" HTTP/1.1\r\nHost: " + target + b"\r\n" + headers + b"\r\n" + extra)
    return conn


def problem_of(conn):
    resp = conn.read_response("GET")
    return resp.status, resp, json.loads(resp.body) if resp.body else None


def test_a_tunnel_carries_tls_to_the_origin_with_its_own_certificate(start_relay, upstream, tmp_path, origin):
    relay = start_forward_relay(start_relay, upstream, tmp_path, connectPorts=[origin.port])
    code, out, err = proxied_curl(f"https://localhost:{origin.port}/through/tunnel", relay.forward_port, "--cacert", str(origin.ca))
    assert code == 0, err
    assert out.startswith("HTTP/1.1 200 Connection established\r\n\r\n"), out
    assert out.endswith("origin saw /through/tunnel")
    # The relay logged one line for the tunnel: the target and byte counts, nothing from inside.
    line = wait_until(lambda: next((l for l in relay.log().splitlines() if "tunnel" in l and "bytes_to_client" in l), None),
                      10, "the tunnel's log line")
    assert f"localhost:{origin.port}" in line
    assert "through" not in relay.log()


def test_connect_to_a_port_not_allowed_is_refused_and_the_connection_stays_usable(start_relay, upstream, tmp_path, origin):
    relay = start_forward_relay(start_relay, upstream, tmp_path, connectPorts=[origin.port])
    with connect(relay, b"localhost:%d" % upstream.port) as conn:
        status, resp, problem = problem_of(conn)
        assert status == 403
        assert problem["type"] == "urn:oauth-relay:problem:connect-port-refused"
        # The same connection takes the next CONNECT.
        conn.send(b"CONNECT localhost:%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % origin.port)
        assert conn.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200 Connection established")


def test_tunnelling_off_refuses_hosts_no_route_names(start_relay, upstream, tmp_path, origin):
    relay = start_forward_relay(start_relay, upstream, tmp_path, connectPorts=[origin.port], tunnelOthers=False)
    with connect(relay, b"localhost:%d" % origin.port) as conn:
        status, _, problem = problem_of(conn)
    assert status == 403
    assert problem["type"] == "urn:oauth-relay:problem:tunnel-refused"


def test_a_connect_target_that_is_not_host_port_is_a_bad_request(start_relay, upstream, tmp_path):
    relay = start_forward_relay(start_relay, upstream, tmp_path)
    for target in (b"localhost", b"user@localhost:443", b"/path", b"local host:443"):
        with connect(relay, target) as conn:
            status, _, _ = problem_of(conn)
            assert status == 400, target
            assert conn.is_closed()


def test_a_refused_connect_is_a_502_and_a_hanging_one_a_504(start_relay, upstream, tmp_path, closed_port, blackhole_port):
    port = free_port()
    relay = start_relay([route(upstream, prefix="/")], limits={"upstreamConnectTimeoutSeconds": 0.5},
                        forward={"listen": f"127.0.0.1:{port}", "connectPorts": [closed_port, blackhole_port]})
    relay.forward_port = port
    wait_until(lambda: _connects(port), 10, "the forward listener")
    with connect(relay, b"127.0.0.1:%d" % closed_port) as conn:
        status, _, problem = problem_of(conn)
        assert conn.is_closed()
    assert status == 502
    assert problem["type"] == "urn:oauth-relay:problem:bad-gateway"
    with connect(relay, b"127.0.0.1:%d" % blackhole_port) as conn:
        status, _, problem = problem_of(conn)
    assert status == 504
    assert problem["type"] == "urn:oauth-relay:problem:gateway-timeout"


def test_the_proxy_asks_for_credentials_when_a_file_lists_them(start_relay, upstream, tmp_path, origin):
    (tmp_path / "proxy-users").write_text("alice:wonderland\n")
    (tmp_path / "proxy-users").chmod(0o600)
    relay = start_forward_relay(start_relay, upstream, tmp_path, connectPorts=[origin.port],
                                proxyAuthFile=str(tmp_path / "proxy-users"))
    url = f"https://localhost:{origin.port}/with/auth"
    code, out, _ = proxied_curl(url, relay.forward_port, "--cacert", str(origin.ca))
    assert out.startswith("HTTP/1.1 407 "), out
    assert 'Proxy-Authenticate: Basic realm="oauth-relay", charset="UTF-8"' in out
    code, out, _ = proxied_curl(url, relay.forward_port, "--cacert", str(origin.ca), "-U", "alice:rabbit")
    assert out.startswith("HTTP/1.1 407 "), out
    code, out, err = proxied_curl(url, relay.forward_port, "--cacert", str(origin.ca), "-U", "alice:wonderland")
    assert code == 0, err
    assert out.endswith("origin saw /with/auth")
    assert "wonderland" not in relay.log()


def test_absolute_form_goes_on_the_routes_for_their_hosts_only(start_relay, upstream, tmp_path):
    relay = start_forward_relay(start_relay, upstream, tmp_path,
                                routes=[route(upstream, prefix="/", host="api.forward.test",
                                              setHeaders={"X-Route": "api"})])
    code, out, err = proxied_curl("http://api.forward.test/v1/x?q=1", relay.forward_port)
    assert code == 0, err
    echo = json.loads(out.split("\r\n\r\n", 1)[1])
    assert echo["target"] == "/v1/x?q=1"
    assert ["X-Route", "api"] in echo["headers"]
    code, out, err = proxied_curl("http://elsewhere.forward.test/x", relay.forward_port)
    assert out.startswith("HTTP/1.1 403 "), out
    assert "host-not-forwarded" in out


def test_absolute_form_http_on_a_route_with_a_credential_is_redirected_to_https(start_relay, upstream, tmp_path):
    # A page served over plain http could make a browser send `<img src="http://api.forward.test/...">`
    # through the proxy without Fetch Metadata: the route's credential must not go with it.
    relay = start_forward_relay(start_relay, upstream, tmp_path, routes=[
        route(upstream, prefix="/", host="api.forward.test", setHeaders={"Authorization": "Basic YXBpOnNlY3JldA=="}),
        route(upstream, prefix="/", host="public.forward.test")])
    served = upstream.stats()["requests_started"]
    with RawConnection("127.0.0.1", relay.forward_port) as conn:
        conn.send(b"GET http://api.forward.test:80/v1/x?q=1&r=%2F HTTP/1.1\r\nHost: api.forward.test\r\n"
                  b"Sec-Fetch-Site: same-origin\r\n\r\n")
        status, resp, problem = problem_of(conn)
        assert status == 308
        assert resp.header("location") == "https://api.forward.test/v1/x?q=1&r=%2F"
        assert problem["type"] == "urn:oauth-relay:problem:https-required"
        assert "Fetch Metadata" in problem["detail"]
        # The connection stays usable, and a route without a credential forwards as before.
        conn.send(b"GET http://public.forward.test/p HTTP/1.1\r\nHost: public.forward.test\r\n\r\n")
        assert conn.read_response("GET").json()["target"] == "/p"
    assert upstream.stats()["requests_started"] == served + 1


def test_absolute_form_never_matches_a_route_without_a_host(start_relay, upstream, tmp_path):
    # A host-less route is the reverse listener's: its credential is never for a site a proxy
    # client names, even one a route names for other paths.
    relay = start_forward_relay(start_relay, upstream, tmp_path, routes=[
        route(upstream, prefix="/gh/", setHeaders={"Authorization": "Basic Z2g6c2VjcmV0"}),
        route(upstream, prefix="/orders/", host="api.orders.test")])
    served = upstream.stats()["requests_started"]
    code, out, err = proxied_curl("http://api.orders.test/gh/user", relay.forward_port)
    assert out.startswith("HTTP/1.1 404 "), out
    assert "no-route" in out
    code, out, err = proxied_curl("http://api.orders.test/orders/1", relay.forward_port)
    assert code == 0 and json.loads(out.split("\r\n\r\n", 1)[1])["target"] == "/orders/1", out
    # The reverse listener still takes the host-less route.
    with RawConnection("127.0.0.1", relay.port) as conn:
        conn.send(b"GET /gh/user HTTP/1.1\r\nHost: relay.test\r\n\r\n")
        assert conn.read_response("GET").json()["target"] == "/gh/user"
    assert upstream.stats()["requests_started"] == served + 2


def test_proxy_authorization_never_reaches_the_upstream(start_relay, upstream, tmp_path):
    (tmp_path / "proxy-users").write_text("alice:wonderland\n")
    (tmp_path / "proxy-users").chmod(0o600)
    relay = start_forward_relay(start_relay, upstream, tmp_path, proxyAuthFile=str(tmp_path / "proxy-users"),
                                routes=[route(upstream, prefix="/", host="api.forward.test")])
    code, out, err = proxied_curl("http://api.forward.test/x", relay.forward_port, "-U", "alice:wonderland")
    assert code == 0, err
    echo = json.loads(out.split("\r\n\r\n", 1)[1])
    assert not [h for h in echo["headers"] if h[0].lower() == "proxy-authorization"]


def test_origin_form_on_the_forward_listener_is_a_bad_request(start_relay, upstream, tmp_path):
    relay = start_forward_relay(start_relay, upstream, tmp_path)
    with RawConnection("127.0.0.1", relay.forward_port) as conn:
        conn.send(b"GET /x HTTP/1.1\r\nHost: relay.test\r\n\r\n")
        status, _, problem = problem_of(conn)
    assert status == 400
    assert "forward proxy" in problem["detail"]


def test_bytes_sent_after_the_connect_head_go_to_the_upstream_first(start_relay, upstream, tmp_path):
    relay = start_forward_relay(start_relay, upstream, tmp_path, connectPorts=[upstream.port])
    # The echo upstream is plain HTTP: through the tunnel it answers the request pipelined after
    # the CONNECT head, sent in the same write.
    with connect(relay, b"127.0.0.1:%d" % upstream.port,
                 extra=b"GET /pipelined HTTP/1.1\r\nHost: upstream\r\nConnection: close\r\n\r\n") as conn:
        assert conn.read_until(b"\r\n\r\n") == b"HTTP/1.1 200 Connection established\r\n\r\n"
        echo = conn.read_response("GET").json()
    assert echo["target"] == "/pipelined"
    # Nothing of the relay's in the tunnelled request: no Via, no X-Forwarded-For.
    assert not [h for h in echo["headers"] if h[0].lower() in ("via", "x-forwarded-for")]


def _descriptors(pid):
    """The relay's open sockets (its other descriptors, an inotify watch opened after the
    listeners for one, are not the tunnels')."""
    fd = f"/proc/{pid}/fd"
    count = 0
    for name in os.listdir(fd):
        try:
            count += os.readlink(f"{fd}/{name}").startswith("socket:")
        except FileNotFoundError:
            pass
    return count


def test_a_client_that_vanishes_mid_tunnel_leaves_no_descriptor(start_relay, upstream, tmp_path):
    # A reset the relay reads closes both sides at once; one it reads as an end of stream (the
    # kernel reports either) half-closes the tunnel, which then ends with the upstream or after
    # limits.idleTimeoutSeconds without a byte.
    port = free_port()
    relay = start_relay([route(upstream, prefix="/")], limits={"idleTimeoutSeconds": 1},
                        forward={"listen": f"127.0.0.1:{port}", "connectPorts": [upstream.port]})
    relay.forward_port = port
    wait_until(lambda: _connects(port), 10, "the forward listener")
    baseline = _descriptors(relay.pid)
    for _ in range(5):
        conn = connect(relay, b"127.0.0.1:%d" % upstream.port)
        assert conn.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200")
        conn.send(b"GET /slow?ms=30000 HTTP/1.1\r\nHost: upstream\r\n\r\n")
        # An abortive close (RST), as a killed client's.
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        conn.close()
    # Both sockets of each tunnel closed (the upstream, still sleeping on /slow, did not end its side).
    wait_until(lambda: _descriptors(relay.pid) <= baseline, 10, "the relay's sockets back to the baseline")
    assert relay.running()


def test_a_forward_listener_that_cannot_be_bound_is_named_in_the_error(upstream, tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        forward_port = taken.getsockname()[1]
        port = free_port()
        workdir = tmp_path / "relay"
        workdir.mkdir()
        relay = Relay(relay_config(f"127.0.0.1:{port}", [route(upstream, prefix="/")], forward={"listen": f"127.0.0.1:{forward_port}"}),
                      workdir, "127.0.0.1", port)
        with pytest.raises(RelayExited) as exited:
            relay.start()
    assert f"cannot listen on 127.0.0.1:{forward_port}" in str(exited.value)
    assert f"cannot listen on 127.0.0.1:{port}" not in str(exited.value)
