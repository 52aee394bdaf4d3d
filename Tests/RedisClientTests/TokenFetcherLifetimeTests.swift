import Crypto
import Endpoints
import EventLoop
import HTTPClient
import Logging
import LoopTestSupport
import RedisProtocol
@testable import Tokens
import XCTest

/// The token loop's objects with `store.redis` (TokenFetcher, SharedStoreFetch, SharedTokens,
/// RedisLink) are all freed once the loop has stopped and its fetcher is let go: none keeps
/// another alive. LeakSanitizer found them left at every such relay's exit (`make test-asan`):
/// SharedTokens held its driver strongly through a closure the link keeps.
final class TokenFetcherLifetimeTests: XCTestCase {
    private weak var fetcher: TokenFetcher?
    private weak var sharedFetch: SharedStoreFetch?
    private weak var shared: SharedTokens?
    private weak var link: RedisLink?

    func testTheTokenLoopsObjectsAreFreedOnceItStopped() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let settings = SharedStoreSettings(endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port), keyPrefix: "test:",
                                           timeoutMilliseconds: 2000, key: SymmetricKey([UInt8](repeating: 7, count: 32)))
        do {
            let fetcher = TokenFetcher(loop: test.loop, limits: HTTPClientLimits(), logger: Logger(label: "test"), observer: nil,
                                       sharedStore: settings)
            let sharedFetch = try XCTUnwrap(fetcher.sharedFetch)
            test.run(until: "the link is up") { sharedFetch.shared.link.isReady }
            self.fetcher = fetcher
            self.sharedFetch = sharedFetch
            shared = sharedFetch.shared
            link = sharedFetch.shared.link
            fetcher.handle(.stop)
        }
        test.closeAndCheckForLeaks()
        XCTAssertNil(fetcher, "the fetcher outlived its loop")
        XCTAssertNil(sharedFetch, "the shared store's fetch strategy outlived the loop")
        XCTAssertNil(shared, "SharedTokens outlived the loop")
        XCTAssertNil(link, "the link to Redis outlived the loop")
    }
}
