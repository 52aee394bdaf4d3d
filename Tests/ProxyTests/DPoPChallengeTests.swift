import HTTP1
@testable import Proxy
import XCTest

/// Reading what an upstream's response says about DPoP: the nonce, and whether a 401 asks for one.
final class DPoPChallengeTests: XCTestCase {
    private func asks(_ value: String) -> Bool {
        withBytes(value) { DPoPChallenge.asksForNonce(challenges: $0) }
    }

    func testAUseDPoPNonceChallengeIsRecognised() {
        for value in [#"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#,
                      "dpop error=use_dpop_nonce", #"DPoP   error = "use_dpop_nonce""#,
                      #"Bearer realm="api", DPoP algs="ES256 PS256", error="use_dpop_nonce""#,
                      #"Basic YWxhZGRpbjpvcGVuc2VzYW1l==, DPoP error="use_dpop_nonce""#,
                      #"DPoP realm="a, b \" c", error="use_dpop_nonce""#, #"DPoP error="use_dpop\_nonce""#] {
            XCTAssertTrue(asks(value), value)
        }
    }

    func testOtherChallengesAreNot() {
        for value in [#"Bearer error="use_dpop_nonce""#, #"DPoP error="invalid_token""#, #"DPoP algs="ES256""#, "DPoP",
                      #"DPoP error="USE_DPOP_NONCE""#, #"DPoP error_description="use_dpop_nonce""#, "", ",,,",
                      #"Bearer realm="DPoP error=use_dpop_nonce""#, #"DPoP error="use_dpop_nonce"#] {
            XCTAssertFalse(asks(value), value)
        }
    }

    func testA401AsksForANonceOnlyWhenItBringsOne() {
        let challenge = #"WWW-Authenticate: DPoP error="use_dpop_nonce""#
        XCTAssertTrue(DPoPChallenge.asksForNonce(parsedHead(head("HTTP/1.1 401 Unauthorized", challenge, "DPoP-Nonce: eyJ7S_zG.9",
                                                                 "Content-Length: 0"), kind: .response)))
        XCTAssertFalse(DPoPChallenge.asksForNonce(parsedHead(head("HTTP/1.1 401 Unauthorized", challenge, "Content-Length: 0"),
                                                             kind: .response)), "no nonce to retry with")
        XCTAssertFalse(DPoPChallenge.asksForNonce(parsedHead(head("HTTP/1.1 401 Unauthorized", challenge, "DPoP-Nonce: a b",
                                                                  "Content-Length: 0"), kind: .response)), "not a nonce")
        XCTAssertFalse(DPoPChallenge.asksForNonce(parsedHead(head("HTTP/1.1 403 Forbidden", challenge, "DPoP-Nonce: n",
                                                                  "Content-Length: 0"), kind: .response)))
    }

    func testTheNonceIsTheFirstDPoPNonceFieldWhenValid() {
        let nonce = { (fields: [String]) -> String? in
            let parsed = parsedHead(head(["HTTP/1.1 200 OK"] + fields + ["Content-Length: 0"]), kind: .response)
            return DPoPChallenge.nonce(in: parsed).map { String(decoding: $0, as: UTF8.self) }
        }
        XCTAssertEqual(nonce(["dpop-nonce: abc!~"]), "abc!~")
        XCTAssertEqual(nonce(["DPoP-Nonce: one", "DPoP-Nonce: two"]), "one")
        XCTAssertNil(nonce([]))
        XCTAssertNil(nonce([#"DPoP-Nonce: "quoted""#]), "NQCHAR excludes the quote")
        XCTAssertNil(nonce(["DPoP-Nonce: back\\slash"]))
        XCTAssertNil(nonce(["DPoP-Nonce: " + String(repeating: "n", count: 513)]), "too long to go in every proof")
    }
}
