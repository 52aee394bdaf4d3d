import Endpoints
import EventLoop
import OAuth2
import Synchronization
@testable import Tokens
import XCTest

final class TokenInboxTests: XCTestCase {
    private func identity(_ name: String) -> IdentityTokens {
        IdentityTokens(identity: Identity(name: name, tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                          grant: .clientCredentials, clientAuth: .publicClient(id: "c")), slot: 0)
    }

    private func names(_ messages: [TokenMessage]) -> [String] {
        messages.map { message in
            switch message {
            case .adopt: "adopt"
            case .needToken(let tokens): "need \(tokens.identity.name)"
            case .reconsider(let tokens): "reconsider \(tokens.identity.name)"
            case .fetchEnded(let tokens, _): "ended \(tokens.identity.name)"
            case .logout(let tokens, _, _): "logout \(tokens.identity.name)"
            case .forgetClient(let tokens, _): "forget the client of \(tokens.identity.name)"
            case .needKeys(let keys): "keys \(keys.issuer)"
            case .exchangeForCaller(let tokens, _): "exchange for a caller of \(tokens.identity.name)"
            case .introspect(let question): "introspect \(question.source.issuer)"
            case .stop: "stop"
            }
        }
    }

    func testMessagesArriveInTheOrderPostedAndAParkedBurstCostsOne() throws {
        let loop = try EventLoop()
        var wakes = 0
        let wakeup = LoopWakeup(loop: loop) { wakes += 1 }
        let inbox = TokenInbox(wakeup: wakeup)
        let a = identity("a"), b = identity("b")

        inbox.post(.adopt(FetcherUpdate(identities: [a, b], tls: [:], limits: .init())))
        for _ in 0..<100 { inbox.post(.needToken(a)) }
        inbox.post(.reconsider(a))
        inbox.post(.needToken(b))
        inbox.post(.needToken(a))
        inbox.post(.stop)

        XCTAssertEqual(names(inbox.takeAll()), ["adopt", "need a", "reconsider a", "need b", "stop"])
        XCTAssertEqual(names(inbox.takeAll()), [], "taken once")
        inbox.post(.needToken(a))
        XCTAssertEqual(names(inbox.takeAll()), ["need a"], "a new burst after the loop took the last one")
        for _ in 0..<10 { loop.runOnce(wait: false) }
        XCTAssertEqual(wakes, 1, "posts before the loop runs coalesce into one wake-up")
        wakeup.close()
        loop.runOnce(wait: false)
        try loop.close()
    }

    /// The queue-depth gauge's observer: the depths it was told, in order.
    private final class Depths: TokenObserver {
        let told = Mutex<[Int]>([])
        func tokenRequestEnded(identity: String, outcome: TokenRequestOutcome) {}
        func tokenExpiryChanged(identity: String, unixTime: Double?) {}
        func identityRemoved(_ name: String) {}
        func tokenInboxDepthChanged(_ depth: Int) { told.withLock { $0.append(depth) } }
    }

    func testTheObserverHearsTheMessagesWaitingAfterEachPostAndZeroAfterATake() throws {
        let loop = try EventLoop()
        let wakeup = LoopWakeup(loop: loop) {}
        let depths = Depths()
        let inbox = TokenInbox(wakeup: wakeup, observer: depths)
        let a = identity("a"), b = identity("b")

        inbox.post(.needToken(a))
        inbox.post(.needToken(a))  // coalesced: nothing more waits, nothing told
        inbox.post(.needToken(b))
        inbox.post(.reconsider(a))
        XCTAssertEqual(depths.told.withLock { $0 }, [1, 2, 3])
        XCTAssertEqual(inbox.takeAll().count, 3)
        inbox.post(.stop)
        _ = inbox.takeAll()
        XCTAssertEqual(depths.told.withLock { $0 }, [1, 2, 3, 0, 1, 0])
        wakeup.close()
        loop.runOnce(wait: false)
        try loop.close()
    }
}
