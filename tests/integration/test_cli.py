"""The command line: `check` (exit 0 valid, 1 with every error's JSON path, 2 usage), `run` with a
broken config, log formats."""

import json
import signal

from deadlines import wait_until
from processes import free_port, relay_config, route, run_cli


def write(tmp_path, config, name="relay.json"):
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else json.dumps(config, indent=2))
    return str(path)


def valid_config():
    return relay_config(f"127.0.0.1:{free_port()}", [
        route("http://127.0.0.1:9", "/api/", name="api", stripPrefix=True, setHeaders={"X-A": "1"}),
        route("http://127.0.0.1:9/base", "/", host="*.example.test"),
    ], limits={"maxHeaderBytes": 8192, "maxHeaderCount": 50, "headerTimeoutSeconds": 0.5,
               "idleTimeoutSeconds": 30, "upstreamConnectTimeoutSeconds": 1,
               "upstreamResponseTimeoutSeconds": 2.5}, trustForwardedHeaders=False)


def broken_config():
    config = valid_config()
    config["lisen"] = "127.0.0.1:1"                               # unknown key
    config["limits"]["maxHeaderCount"] = "ten"                      # wrong type
    config["routes"][0]["upstream"] = "ftp://127.0.0.1:9"           # not an http upstream
    config["routes"][1]["upstreem"] = "http://127.0.0.1:9"          # unknown key (typo)
    return config


BROKEN_PATHS = ["$.lisen", "$.limits.maxHeaderCount", "$.routes[0].upstream", "$.routes[1].upstreem"]


def lines_naming(output: str, path: str) -> list[str]:
    return [line for line in output.splitlines() if path in line]


def test_check_accepts_a_valid_config(tmp_path):
    result = run_cli("check", "--config", write(tmp_path, valid_config()))
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_reports_every_error_with_its_json_path(tmp_path):
    result = run_cli("check", "--config", write(tmp_path, broken_config()))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    for path in BROKEN_PATHS:
        assert lines_naming(output, path), f"no line names {path}:\n{output}"


def test_check_reports_an_unknown_route_key_with_its_path(tmp_path):
    config = valid_config()
    config["routes"][0]["match"]["pathPrefx"] = "/x/"
    result = run_cli("check", "--config", write(tmp_path, config))
    assert result.returncode == 1
    assert lines_naming(result.stdout + result.stderr, "$.routes[0].match.pathPrefx")


def test_check_names_a_plain_http_token_url_once(tmp_path):
    config = valid_config()
    config["identities"] = {"orders": {"tokenUrl": "http://idp.example.test/token", "clientId": "relay", "clientSecret": "s"}}
    config["routes"][0]["identity"] = "orders"
    result = run_cli("check", "--config", write(tmp_path, config))
    assert result.returncode == 1
    [line] = lines_naming(result.stdout + result.stderr, "$.identities.orders.tokenUrl")
    assert line == ("$.identities.orders.tokenUrl: http://idp.example.test/token is plain http:// to a host that is not "
                    "loopback, so the client credentials and tokens would cross the network unencrypted; use https://, "
                    'or set "allowInsecureTokenUrl": true to accept the risk'), line


def test_check_rejects_a_route_without_upstream(tmp_path):
    config = valid_config()
    del config["routes"][1]["upstream"]
    result = run_cli("check", "--config", write(tmp_path, config))
    assert result.returncode == 1
    assert lines_naming(result.stdout + result.stderr, "$.routes[1]")


def test_check_rejects_a_listen_address_without_port(tmp_path):
    config = valid_config()
    config["listen"] = "127.0.0.1"
    result = run_cli("check", "--config", write(tmp_path, config))
    assert result.returncode == 1
    assert lines_naming(result.stdout + result.stderr, "$.listen")


def test_check_reports_an_unreadable_tls_file_with_its_path(tmp_path):
    config = valid_config()
    config["routes"][1]["upstream"] = "https://127.0.0.1:8443"
    config["routes"][1]["tls"] = {"caFile": str(tmp_path / "no-such-ca.pem")}
    result = run_cli("check", "--config", write(tmp_path, config))
    assert result.returncode == 1
    assert lines_naming(result.stdout + result.stderr, "$.routes[1].tls")


def test_check_rejects_invalid_json_with_exit_1(tmp_path):
    result = run_cli("check", "--config", write(tmp_path, '{"listen": "127.0.0.1:1", "routes": ['))
    assert result.returncode == 1, result.stdout + result.stderr


def test_check_of_a_missing_file_exits_1(tmp_path):
    result = run_cli("check", "--config", str(tmp_path / "does-not-exist.json"))
    assert result.returncode == 1, result.stdout + result.stderr


def test_check_without_config_is_a_usage_error(tmp_path):
    assert run_cli("check").returncode == 2


def test_unknown_subcommand_is_a_usage_error(tmp_path):
    assert run_cli("frobnicate", "--config", write(tmp_path, valid_config())).returncode == 2


def test_unknown_option_is_a_usage_error(tmp_path):
    assert run_cli("check", "--config", write(tmp_path, valid_config()), "--no-such-flag").returncode == 2


def test_run_with_a_broken_config_exits_1_naming_the_paths(tmp_path):
    result = run_cli("run", "--config", write(tmp_path, broken_config()), timeout=10)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    for path in BROKEN_PATHS:
        assert lines_naming(output, path), f"no line names {path}:\n{output}"


def test_json_log_format_writes_one_json_object_per_line(start_relay, upstream):
    relay = start_relay([route(upstream)], args=("--log-format", "json", "--log-level", "debug"))
    assert relay.request("GET", "/json-log-probe").status == 200
    assert relay.stop(signal.SIGTERM) == 0
    lines = [line for line in relay.log().splitlines() if line.strip()]
    assert lines, "no log lines at debug level"
    for line in lines:
        assert isinstance(json.loads(line), dict), line


def test_access_log_names_each_request(start_relay, upstream):
    relay = start_relay([route(upstream)], args=("--log-level", "info"))
    assert relay.request("GET", "/access-log-probe?x=1").status == 200
    wait_until(lambda: "/access-log-probe" in relay.log(), 5, "an access log line for the request")
