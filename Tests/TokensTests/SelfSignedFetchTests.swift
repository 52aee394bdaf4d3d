import Crypto
import Endpoints
import EventLoop
import FileTestSupport
import Foundation
import HTTPClient
import JOSE
import Logging
import OAuth2
import SafeText
import Synchronization
import TokenStore
@testable import Tokens
import XCTest

/// A self-signed Google service account (SelfSignedFetch.swift): its fetches go no other way
/// whatever the stores, its token is made on the token thread with no request, and the rest (the
/// lifecycle, the observer) sees it as it sees a fetched token.
final class SelfSignedFetchTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let email = "relay@orders-project.iam.gserviceaccount.com"

    /// The identity, whose `token_uri` is a port nothing listens on: a request would fail.
    private func identity(_ token: ServiceAccountGrant.Token = .selfSignedAudience("https://pubsub.googleapis.com/")) throws -> Identity {
        let tokenURI = HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token")
        let key = ServiceAccountKey(clientEmail: Self.email,
                                    signingKey: try ClientAssertionKey(privateKey: Self.rsa, algorithm: .rs256, keyID: "k-1"),
                                    tokenURI: tokenURI)
        return Identity(name: "gsa", tokenUrl: tokenURI, grant: .serviceAccount(ServiceAccountGrant(key: key, token: token)))
    }

    func testASelfSignedIdentityGoesItsOwnWayWhateverTheStores() {
        for (file, shared, stored) in [(false, false, true), (true, false, true), (false, true, true), (true, true, false)] {
            XCTAssertEqual(FetchRoute.choose(hasFileStore: file, hasSharedStore: shared, isStored: stored, isSelfSigned: true), .selfSigned)
        }
    }

    func testNoStoreKeepsASelfSignedToken() throws {
        XCTAssertFalse(TokenPersistence.isStored(IdentityTokens(identity: try identity(), slot: 0)))
        let fetched = try identity(.tokenEndpoint(scope: "s", subject: nil))
        XCTAssertTrue(TokenPersistence.isStored(IdentityTokens(identity: fetched, slot: 1)))
    }

    func testTheFetcherGivesItTheSelfSignedStrategyEvenWithAFileStore() throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let store = try TokenStore(path: scratch.path + "/store", key: SymmetricKey([UInt8](repeating: 3, count: 32)))
        let loop = try EventLoop()
        let fetcher = TokenFetcher(loop: loop, limits: HTTPClientLimits(), logger: Logger(label: "test"), observer: nil, store: store)
        XCTAssertTrue(fetcher.strategy(for: IdentityTokens(identity: try identity(), slot: 0)) is SelfSignedFetch)
        let fetched = IdentityTokens(identity: try identity(.tokenEndpoint(scope: "s", subject: nil)), slot: 1)
        XCTAssertTrue(fetcher.strategy(for: fetched) is FileLockedFetch)
        fetcher.inbox.post(.stop)
        loop.run()
        try loop.close()
    }

    private final class Observed: TokenObserver {
        let events = Mutex<[String]>([])
        let expiry = Mutex<Double?>(nil)
        func tokenRequestEnded(identity: String, outcome: TokenRequestOutcome) {
            events.withLock { $0.append("\(identity) \(outcome)") }
        }
        func tokenExpiryChanged(identity: String, unixTime: Double?) {
            expiry.withLock { $0 = unixTime }
        }
        func identityRemoved(_ name: String) {}
    }

    func testTheTokenIsMadeWithoutARequestAndRecordedLikeAFetchedOne() throws {
        let observer = Observed()
        let service = try TokenService.start(identities: ["gsa": try identity()], limits: HTTPClientLimits(),
                                             logger: Logger(label: "test"), observer: observer)
        defer { service.stop() }
        let tokens = try XCTUnwrap(service.tokenSet["gsa"])
        let deadline = monotonicSeconds() + 10
        var decision = tokens.decide(at: monotonicSeconds(), wakingOnResult: nil)
        while case .wait = decision, monotonicSeconds() < deadline {
            usleep(2_000)
            decision = tokens.decide(at: monotonicSeconds(), wakingOnResult: nil)
        }
        guard case .inject(let token) = decision else { return XCTFail("no token: \(decision)") }
        let now = Int64(Date().timeIntervalSince1970)
        let key = try JWSVerificationKey(publicKey: Self.rsa.publicKey, allowing: [.rs256])
        let claims = try JWT.verifiedClaims(token.value, key: key, rules: JWTValidationRules(issuer: Self.email), now: now)
        XCTAssertEqual(claims.audience, ["https://pubsub.googleapis.com/"])
        XCTAssertEqual(claims.subject, Self.email)
        XCTAssertEqual(try XCTUnwrap(claims.expiry) - XCTUnwrap(claims.issuedAt), 3600)
        XCTAssertEqual(token.type, "Bearer")
        // Due again 10% of the hour before it expires, like a fetched token of that lifetime.
        XCTAssertEqual(token.refreshAt - token.issuedAt, RefreshSchedule.refreshAt(issuedAt: 0, lifetime: token.expiresAt - token.issuedAt,
                                                                                  skew: 10), accuracy: 0.001)
        XCTAssertEqual(token.expiresAt - token.issuedAt, 3599, accuracy: 2)
        // The token is published before the observer hears of it (TokenRequests.record), the
        // expiry last: wait for that.
        while observer.expiry.withLock({ $0 == nil }) && monotonicSeconds() < deadline { usleep(1_000) }
        XCTAssertEqual(observer.events.withLock { $0 }, ["gsa success"])
        XCTAssertEqual(try XCTUnwrap(observer.expiry.withLock { $0 }), Double(try XCTUnwrap(claims.expiry)), accuracy: 2)
        XCTAssertTrue(tokens.status(at: monotonicSeconds()).hasValidToken)
    }
}
