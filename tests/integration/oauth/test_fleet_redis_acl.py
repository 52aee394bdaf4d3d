"""A managed Redis's credentials and every identity's logout shared by the fleet (issue 27), with
the real binary, Debian's redis-server and django-oauth-toolkit (token requests counted at the
IdP):

- `store.username` and `store.passwordFile`: a Redis ACL user whose password the relays read from
  a file; the password rotated (ACL SETUSER, the relays' connections killed, the file rewritten)
  is taken up at the next reconnection without a reload, and a wrong one is an outage (each
  replica fetches alone) logged with the file's path, never the password;
- a client-credentials identity's logout (`DELETE /identities/NAME/token`) on one replica makes
  every replica drop its token and take a new one; so does `oauth-relay logout` run beside relays
  without an admin listener (the command removes the shared entry and announces it itself).
"""

from __future__ import annotations

import secrets

import pytest

from admin_client import log_records, wait_for_log
from deadlines import wait_until
from idp_relay import bearer
from processes import LOOPBACK, run_cli
from redis_server import RedisServer
from test_fleet_redis import RESUMED, UNAVAILABLE, shared_store, start_fleet

pytestmark = pytest.mark.oauth

ACL_USER = "relay-fleet"
# What the ACL user may touch: the relays' keys and channel, as a managed Redis's user would.
ACL_RULES = ("on", "~oauth-relay:*", "&oauth-relay:*", "+@all")


@pytest.fixture
def acl_redis(tmp_path, sensitive):
    """A redis-server whose default user has an administrator's password (for redis-cli) and an
    ACL user for the relays, whose password starts in `redis.password_file`."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = RedisServer(workdir, password=sensitive.add("redis admin password", secrets.token_hex(16))).start()
    server.acl_password = sensitive.add("redis ACL password", secrets.token_hex(16))
    server.cli("ACL", "SETUSER", ACL_USER, *ACL_RULES, f">{server.acl_password}")
    server.password_file = tmp_path / "redis-password"
    server.password_file.write_text(server.acl_password + "\n")
    yield server
    server.kill()


def acl_store(redis) -> dict:
    """The store of a relay logging in as the ACL user, with the password from the file."""
    return shared_store(f"redis://{LOOPBACK}:{redis.port}/0", username=ACL_USER, passwordFile=str(redis.password_file))


def relay_connections(redis, older_than: int = 0) -> int:
    """The connections the ACL user has had open for `older_than` seconds at least (each relay keeps
    two: commands and the subscription)."""
    clients = [dict(field.split("=", 1) for field in line.split() if "=" in field) for line in redis.cli("CLIENT", "LIST").splitlines()]
    return sum(1 for client in clients if client.get("user") == ACL_USER and int(client["age"]) >= older_than)


def test_replicas_logging_in_as_an_acl_user_share_tokens(acl_redis, django_idp, upstream, start_relay):
    first, second = start_fleet(start_relay, django_idp, upstream, acl_store(acl_redis), replicas=2)
    token = bearer(first.request("GET", "/echo/x"))
    wait_until(lambda: len(acl_redis.dump()) == 1, 5, "the shared entry written")
    assert bearer(second.request("GET", "/echo/x")) == token
    assert len(django_idp.token_requests()) == 1
    assert relay_connections(acl_redis) == 4


def test_a_rotated_password_is_read_from_the_file_at_the_next_connection(acl_redis, django_idp, upstream, start_relay,
                                                                         sensitive):
    """The password changes at the server and the relays' connections are killed before the file
    is rewritten: they cannot log in meanwhile (an outage: each fetches alone, one warning naming
    the file and never a password), and they log in with the new password once the file holds it,
    with no reload."""
    first, second = start_fleet(start_relay, django_idp, upstream, acl_store(acl_redis), replicas=2)
    token = bearer(first.request("GET", "/echo/x"))
    # Connections up for a while: losing them is first met with a reconnection at once (an idle
    # timeout is no outage), whose refused AUTH begins the outage.
    wait_until(lambda: relay_connections(acl_redis, older_than=2) == 4, 10, "both relays connected for 2 s")
    new_password = sensitive.add("rotated redis ACL password", secrets.token_hex(16))
    acl_redis.cli("ACL", "SETUSER", ACL_USER, "resetpass", f">{new_password}")
    acl_redis.cli("CLIENT", "KILL", "USER", ACL_USER)
    for relay in (first, second):
        warning = wait_for_log(relay, UNAVAILABLE, 1)
        assert warning["password_file"] == str(acl_redis.password_file)
        assert "WRONGPASS" in warning["error"], warning
    # Degraded mode: requests are served with what each replica holds.
    assert bearer(second.request("GET", "/echo/x")) == token
    acl_redis.password_file.write_text(new_password + "\n")
    for relay in (first, second):
        wait_for_log(relay, RESUMED, 1)
    assert relay_connections(acl_redis) == 4
    assert [r["msg"] for r in log_records(first) if r["msg"] in (UNAVAILABLE, RESUMED)] == [UNAVAILABLE, RESUMED], \
        "one warning for the outage, one line for its end"
    assert len(log_records(first, "configuration reloaded")) == 0


def test_a_client_credentials_logout_on_one_replica_is_honoured_by_every_replica(acl_redis, django_idp, upstream,
                                                                                  start_relay):
    """`DELETE /identities/orders/token` on one replica: the other drops the token it holds and
    takes the new one (the IdP sees a second token request, the upstream a different token)."""
    first, second = start_fleet(start_relay, django_idp, upstream, acl_store(acl_redis), replicas=2, admin=True)
    old = bearer(first.request("GET", "/echo/x"))
    assert bearer(second.request("GET", "/echo/x")) == old
    assert len(django_idp.token_requests()) == 1
    assert first.admin.request("DELETE", "/identities/orders/token").status == 204
    wait_for_log(second, "logged out through another replica", 1)
    new = wait_until(lambda: (t := bearer(second.request("GET", "/echo/x"))) != old and t, 5,
                     "the other replica to use a new token")
    assert bearer(first.request("GET", "/echo/x")) == new, "the new token is shared too"
    assert len(django_idp.token_requests()) == 2
    assert len(log_records(first, "logged out through another replica")) == 0, "the replica that logged out heard its own"


def test_a_client_credentials_logout_from_the_command_line_is_honoured_by_every_running_replica(
        acl_redis, django_idp, upstream, start_relay, sensitive):
    """`oauth-relay logout` with relays that have no admin listener: the command itself removes the
    shared entry and announces it, and both running replicas drop the token and share a new one."""
    first, second = start_fleet(start_relay, django_idp, upstream, acl_store(acl_redis), replicas=2)
    old = bearer(first.request("GET", "/echo/x"))
    assert bearer(second.request("GET", "/echo/x")) == old
    assert len(django_idp.token_requests()) == 1
    done = run_cli("logout", "--config", str(first.config_path), "orders")
    sensitive.add_output("oauth-relay logout", done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr
    assert "Logged out of identity orders" in done.stderr, done.stderr
    for relay in (first, second):
        wait_for_log(relay, "logged out through another replica", 1)
    new = wait_until(lambda: (t := bearer(first.request("GET", "/echo/x"))) != old and t, 5,
                     "a replica to use a new token")
    assert bearer(second.request("GET", "/echo/x")) == new, "the new token is shared too"
    assert len(django_idp.token_requests()) == 2
