"""`oauth-relay check` on the token store (`store`): the key's length, the directory's owner and
mode, and a key that opens none of the entries present. No servers: `check` subprocesses only."""

import base64
import os

from processes import STORE_KEY, free_port, relay_config, route, run_check


def check(tmp_path, store):
    return run_check(tmp_path, relay_config(f"127.0.0.1:{free_port()}", [route("http://127.0.0.1:9", "/")], store=store))


def test_a_store_in_a_directory_not_yet_created_is_valid(tmp_path):
    code, output = check(tmp_path, {"path": str(tmp_path / "state" / "tokens"), "key": STORE_KEY})
    assert code == 0, output
    assert not (tmp_path / "state").exists(), "check must not create the directory"


def test_a_key_of_another_length_is_refused_without_quoting_it(tmp_path):
    short = base64.b64encode(bytes(16)).decode()
    code, output = check(tmp_path, {"path": str(tmp_path / "tokens"), "key": short})
    assert code == 1
    assert "$.store.key" in output and "16 bytes, not 32" in output, output
    assert short not in output


def test_a_directory_others_may_write_to_is_refused(tmp_path):
    directory = tmp_path / "tokens"
    directory.mkdir()
    os.chmod(directory, 0o777)
    code, output = check(tmp_path, {"path": str(directory), "key": STORE_KEY})
    assert code == 1
    assert "$.store" in output and "writable by group or others" in output, output
    os.chmod(directory, 0o700)
    assert check(tmp_path, {"path": str(directory), "key": STORE_KEY})[0] == 0


def test_a_key_that_opens_none_of_the_entries_is_refused(tmp_path):
    directory = tmp_path / "tokens"
    directory.mkdir(mode=0o700)
    # An entry's header as another key writes it: magic, version, that key's id, a fingerprint.
    (directory / "identity-orders.token").write_bytes(b"ORTS\x01" + bytes(8) + bytes(32) + bytes(40))
    code, output = check(tmp_path, {"path": str(directory), "key": STORE_KEY})
    assert code == 1
    assert "written with another key" in output and str(directory) in output, output
    assert STORE_KEY not in output


def test_a_shared_store_is_checked_without_connecting_plain_or_tls(tmp_path):
    # Nothing listens on port 1: `check` connects to nothing.
    code, output = check(tmp_path, {"redis": "redis://relay:a-redis-password@127.0.0.1:1/0", "key": STORE_KEY})
    assert code == 0, output
    code, output = check(tmp_path, {"redis": "rediss://relay:a-redis-password@127.0.0.1:1/0", "key": STORE_KEY})
    assert code == 0, output


def test_store_tls_files_are_loaded_by_check_and_tls_needs_rediss(tmp_path):
    ca = tmp_path / "redis-ca.pem"
    ca.write_text("not a certificate\n")
    code, output = check(tmp_path, {"redis": "rediss://relay:a-redis-password@127.0.0.1:1/0", "key": STORE_KEY,
                                    "tls": {"caFile": str(ca)}})
    assert code == 1
    assert "$.store.tls.caFile: cannot load CA certificates from " + str(ca) in output, output
    code, output = check(tmp_path, {"redis": "redis://relay:a-redis-password@127.0.0.1:1/0", "key": STORE_KEY, "tls": {}})
    assert code == 1
    assert "$.store.tls: tls is set but store.redis is not a TLS URL: write rediss:// (rediss-cluster://, rediss-sentinel://) for TLS" in output, output
    assert "a-redis-password" not in output
