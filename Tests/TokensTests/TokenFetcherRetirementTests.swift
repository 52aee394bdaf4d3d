import Endpoints
import EventLoop
import HTTPClient
import JOSE
import Logging
import OAuth2
@testable import Tokens
import XCTest

/// What the token loop keeps per identity goes when a reload has removed the identity and nothing
/// of it is under way any more: slots are never reused, so anything kept by slot would otherwise
/// grow with every reload.
final class TokenFetcherRetirementTests: XCTestCase {
    /// A person's identity: adopting it asks the IdP nothing until someone logs in.
    private func identity(_ name: String) -> Identity {
        var identity = Identity(name: name, tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                grant: .authorizationCode(seed: nil), clientAuth: .publicClient(id: "cli"))
        identity.authorizationUrl = HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/authorize")
        return identity
    }

    private func adopt(_ identities: [IdentityTokens], on fetcher: TokenFetcher, _ loop: EventLoop) {
        fetcher.inbox.post(.adopt(FetcherUpdate(identities: identities, tls: [:], limits: HTTPClientLimits())))
        for _ in 0..<3 { loop.runOnce(wait: false) }
    }

    func testAReloadThatRemovesAnIdentityDropsTheIdPKeysItFetched() throws {
        let loop = try EventLoop()
        let fetcher = TokenFetcher(loop: loop, limits: HTTPClientLimits(), logger: Logger(label: "test"), observer: nil)
        let kept = IdentityTokens(identity: identity("kept"), slot: 0)
        let removed = IdentityTokens(identity: identity("removed"), slot: 1)
        adopt([kept, removed], on: fetcher, loop)
        let keys = JWKSet(keys: [])
        fetcher.idTokens.keySets[kept.slot] = keys
        fetcher.idTokens.keySets[removed.slot] = keys

        adopt([kept], on: fetcher, loop)
        XCTAssertNil(fetcher.idTokens.keySets[removed.slot], "the removed identity's JWKS is still kept")
        XCTAssertEqual(fetcher.idTokens.keySets[kept.slot], keys)

        fetcher.inbox.post(.stop)
        loop.run()
        try loop.close()
    }
}
