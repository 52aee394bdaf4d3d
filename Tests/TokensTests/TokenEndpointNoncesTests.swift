import Endpoints
import OAuth2
@testable import Tokens
import SafeText
import XCTest

/// The token thread's memory of DPoP nonces, and when a token request goes again.
final class TokenEndpointNoncesTests: XCTestCase {
    private func tokens(slot: Int) -> IdentityTokens {
        var identity = Identity(name: "svc\(slot)", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"))
        identity.dpop = .generatedKey(.es256)
        return IdentityTokens(identity: identity, slot: slot)
    }

    private let useNonce = Result<TokenResponse, TokenEndpointError>.failure(
        .oauth(OAuthError(code: .useDPoPNonce), status: 400, retryAfter: nil))
    private let token = Result<TokenResponse, TokenEndpointError>.success(TokenResponse(accessToken: Secret("at"), expiresIn: 60))

    private func reply(nonce: String?) -> TokenEndpointReply {
        TokenEndpointReply(status: 400, headers: nonce.map { [("DPoP-Nonce", $0)] } ?? [], body: "")
    }

    func testUseDPoPNonceWithANonceIsRetriedOnce() {
        let nonces = TokenEndpointNonces(), svc = tokens(slot: 0)
        XCTAssertTrue(nonces.answer(reply(nonce: "n-1"), outcome: useNonce, for: svc, alreadyRetried: false))
        XCTAssertEqual(nonces.nonce(for: svc), "n-1")
        XCTAssertFalse(nonces.answer(reply(nonce: "n-2"), outcome: useNonce, for: svc, alreadyRetried: true), "once")
        XCTAssertEqual(nonces.nonce(for: svc), "n-2", "the latest is kept all the same")
    }

    func testWithoutAUsableNonceThereIsNothingToRetryWith() {
        let nonces = TokenEndpointNonces(), svc = tokens(slot: 0)
        XCTAssertFalse(nonces.answer(reply(nonce: nil), outcome: useNonce, for: svc, alreadyRetried: false))
        XCTAssertFalse(nonces.answer(reply(nonce: "bad nonce"), outcome: useNonce, for: svc, alreadyRetried: false))
        XCTAssertNil(nonces.nonce(for: svc))
    }

    func testANonceOnASuccessIsKeptForTheNextRequest() {
        let nonces = TokenEndpointNonces(), svc = tokens(slot: 0)
        XCTAssertFalse(nonces.answer(reply(nonce: "n-3"), outcome: token, for: svc, alreadyRetried: false))
        XCTAssertEqual(nonces.nonce(for: svc), "n-3")
    }

    func testOtherErrorsAreNotRetried() {
        let nonces = TokenEndpointNonces(), svc = tokens(slot: 0)
        let invalid = Result<TokenResponse, TokenEndpointError>.failure(.oauth(OAuthError(code: .invalidDPoPProof), status: 400, retryAfter: nil))
        XCTAssertFalse(nonces.answer(reply(nonce: "n"), outcome: invalid, for: svc, alreadyRetried: false))
    }

    /// Nonces are per identity: servers such as Glewlwyd keep one per client.
    func testEachIdentityHasItsOwnNonce() {
        let nonces = TokenEndpointNonces(), first = tokens(slot: 0), second = tokens(slot: 1)
        _ = nonces.answer(reply(nonce: "a"), outcome: token, for: first, alreadyRetried: false)
        XCTAssertNil(nonces.nonce(for: second))
        nonces.forget(slot: 0)
        XCTAssertNil(nonces.nonce(for: first))
    }
}
