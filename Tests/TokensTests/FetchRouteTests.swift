import Crypto
import Endpoints
import EventLoop
import FileTestSupport
import HTTPClient
import Logging
import LoopTestSupport
import OAuth2
import TokenStore
@testable import Tokens
import XCTest

/// Which way an identity's fetches go (TokenFetchStrategy.swift), from the configuration's stores
/// and the identity.
final class FetchRouteTests: XCTestCase {
    func testWithoutAStoreEveryIdentityFetchesDirectly() {
        XCTAssertEqual(FetchRoute.choose(hasFileStore: false, hasSharedStore: false, isStored: true, isSelfSigned: false), .direct)
        XCTAssertEqual(FetchRoute.choose(hasFileStore: false, hasSharedStore: false, isStored: false, isSelfSigned: false), .direct)
    }

    /// TokenPersistence itself keeps nothing of tokens bound to a generated key, but their
    /// fetches still go through it, as before the split.
    func testAFileStoreTakesEveryIdentitysFetches() {
        XCTAssertEqual(FetchRoute.choose(hasFileStore: true, hasSharedStore: false, isStored: true, isSelfSigned: false), .fileLocked)
        XCTAssertEqual(FetchRoute.choose(hasFileStore: true, hasSharedStore: false, isStored: false, isSelfSigned: false), .fileLocked)
    }

    func testTheSharedStoreTakesTheIdentitiesWhoseTokensAreStored() {
        XCTAssertEqual(FetchRoute.choose(hasFileStore: false, hasSharedStore: true, isStored: true, isSelfSigned: false), .shared)
        XCTAssertEqual(FetchRoute.choose(hasFileStore: true, hasSharedStore: true, isStored: true, isSelfSigned: false), .shared)
    }

    /// Tokens bound to a DPoP key this process generated are of no use to another replica.
    func testTokensBoundToAGeneratedKeyStayOnThisReplica() {
        XCTAssertEqual(FetchRoute.choose(hasFileStore: false, hasSharedStore: true, isStored: false, isSelfSigned: false), .direct)
        XCTAssertEqual(FetchRoute.choose(hasFileStore: true, hasSharedStore: true, isStored: false, isSelfSigned: false), .fileLocked)
    }

    private func tokens(_ name: String, slot: Int, generatedKey: Bool = false) -> IdentityTokens {
        var identity = Identity(name: name, tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                grant: .clientCredentials, clientAuth: .publicClient(id: "c"))
        if generatedKey { identity.dpop = .generatedKey(.es256) }
        return IdentityTokens(identity: identity, slot: slot)
    }

    private func stop(_ fetcher: TokenFetcher, _ loop: EventLoop) throws {
        fetcher.inbox.post(.stop)
        loop.run()
        try loop.close()
    }

    func testTheFetcherGivesEachIdentityTheStrategyOfItsRoute() throws {
        let loop = try EventLoop()
        let fetcher = TokenFetcher(loop: loop, limits: HTTPClientLimits(), logger: Logger(label: "test"), observer: nil)
        XCTAssertTrue(fetcher.strategy(for: tokens("svc", slot: 0)) is DirectFetch)
        XCTAssertNil(fetcher.sharedStore(for: tokens("svc", slot: 0)))
        try stop(fetcher, loop)
    }

    func testWithAFileStoreEveryIdentityFetchesUnderItsLock() throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let store = try TokenStore(path: scratch.path + "/store", key: SymmetricKey([UInt8](repeating: 3, count: 32)))
        let loop = try EventLoop()
        let fetcher = TokenFetcher(loop: loop, limits: HTTPClientLimits(), logger: Logger(label: "test"), observer: nil, store: store)
        XCTAssertTrue(fetcher.strategy(for: tokens("svc", slot: 0)) is FileLockedFetch)
        XCTAssertTrue(fetcher.strategy(for: tokens("bound", slot: 1, generatedKey: true)) is FileLockedFetch)
        try stop(fetcher, loop)
    }
}
