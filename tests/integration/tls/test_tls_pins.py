"""SPKI pins (`tls.pins`, `sha256/<base64 of the SHA-256 of the DER SubjectPublicKeyInfo>`): a
connection whose chain holds a pinned key passes, one whose chain holds none is refused with a
502 whose detail says `pin`."""

import pytest

from tls_relay import PIN, assert_tls_problem, nginx_saw, tls_route

pytestmark = pytest.mark.tls


def test_tls_pin_of_the_server_key_passes(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, pins=[tls_pki.pin("server")])])
    assert nginx_saw(relay.request("GET", "/pinned"))["uri"] == "/pinned"


def test_tls_pin_mismatch_gets_502_saying_so(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, pins=[tls_pki.pin("unrelated")])])
    assert_tls_problem(relay.request("GET", "/"), PIN)
    assert nginx_tls.access_records() == [], "a request reached an upstream whose key is not pinned"


def test_tls_pin_of_another_valid_certificate_does_not_pass(nginx_tls, tls_pki, start_relay):
    # wrong.example's certificate is from the same CA: its key is still not the server's.
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, pins=[tls_pki.pin("wrong_name")])])
    assert_tls_problem(relay.request("GET", "/"), PIN)


def test_tls_one_matching_pin_among_several_passes(nginx_tls, tls_pki, start_relay):
    # A backup pin first, the current key second (the usual rotation setup).
    pins = [tls_pki.pin("unrelated"), tls_pki.pin("server")]
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, pins=pins)])
    assert nginx_saw(relay.request("GET", "/")).get("ssl_protocol")


def test_tls_pin_mismatch_detail_does_not_leak_the_pins(nginx_tls, tls_pki, start_relay):
    # Pins are public key hashes, not secrets; still, the detail is for the client: it says what
    # failed. This only checks it is a short sentence, not a dump of the configuration.
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, pins=[tls_pki.pin("unrelated")])])
    doc = assert_tls_problem(relay.request("GET", "/"), PIN)
    assert len(doc["detail"]) < 400, doc
