import Config
import HTTP1
import OAuth2
@testable import Proxy
import XCTest

/// An exchange driven the way a client connection drives it, without a socket: heads are parsed
/// from text, routes are plans of test routes, tokens are made up.
struct ExchangeDriver {
    var exchange = Exchange()
    /// The loop's time, in milliseconds.
    var now: UInt64 = 1_000

    /// A request head arrives and is placed on `plan` (with the identity's lookup `token`,
    /// nil for a route without an identity).
    mutating func request(_ text: String, on plan: RoutePlan = ExchangeDriver.plan(), token: WorkerTokens.Lookup? = nil,
                          draining: Bool = false, upgrade: [UInt8]? = nil) -> Exchange.HeadAction {
        let head = parsedHead(text)
        _ = exchange.readingStarts()
        exchange.headParsed(head, keepAlive: head.keepAlive && !draining, startedAt: 0)
        return exchange.routed(plan, upgrade: upgrade, token: token)
    }

    /// A request head the routing refused arrives.
    mutating func refusedRequest(_ text: String, _ problem: Problem, closing: Bool) -> Exchange.HeadAction {
        let head = parsedHead(text)
        _ = exchange.readingStarts()
        exchange.headParsed(head, keepAlive: head.keepAlive, startedAt: 0)
        return exchange.refused(problem, closing: closing)
    }

    /// The whole request has arrived.
    @discardableResult
    mutating func requestEnds() -> Exchange.RequestEnd { exchange.requestEnded().end }

    /// A response head from the upstream; a refused token is reported to an identity that
    /// drops it unless `refusalKept`.
    mutating func response(_ text: String, refusalKept: Bool = false) -> Exchange.ResponseHeadAction {
        let head = parsedHead(text, kind: .response)
        let action = exchange.responseHead(head)
        guard case .reportRefusedToken = action else { return action }
        return exchange.refusalReported(kept: refusalKept, head: head)
    }

    /// The upstream's message ends and the read that carried its end is parsed.
    mutating func responseEnds() -> (Exchange.ResponseEnd, Exchange.ResponseFinish) {
        _ = exchange.releaseHead()
        let end = exchange.responseMessageEnded()
        if case .interim = end { return (end, .finish) }
        return (end, exchange.responseFinished())
    }

    /// A route to a test upstream; `identity` names an identity (none: forwarded without a token),
    /// `interactive`: one that logs a person in.
    static func plan(identity: String? = nil, retryOnStatus: [Int] = [401], upgrade: [String] = ["websocket"],
                     interactive: Bool = false) -> RoutePlan {
        guard let url = UpstreamURL(parsing: "http://orders.internal:8080") else { preconditionFailure("test upstream") }
        return RoutePlan(route: Route(name: "orders", upstream: url, identity: identity, retryOnStatus: retryOnStatus,
                                      upgrade: upgrade), interactiveIdentity: interactive)
    }

    static func token(_ value: String) -> WorkerTokens.CachedToken {
        WorkerTokens.CachedToken(value: value, bytes: Array(value.utf8), slot: 0, generation: 1, expiresAtMilliseconds: .max)
    }

    static func unavailable(_ identity: String = "svc") -> TokenUnavailable {
        TokenUnavailable(identity: identity, reason: .unavailable, retryAfterSeconds: 3, detail: "the token endpoint is down")
    }
}

/// The problem of an `.answer` head action, or a test failure.
func answered(_ action: Exchange.HeadAction, file: StaticString = #filePath, line: UInt = #line) -> Problem? {
    guard case .answer(let problem) = action else {
        XCTFail("expected a local answer, got \(action)", file: file, line: line)
        return nil
    }
    return problem
}

func isForward(_ action: Exchange.HeadAction) -> Bool {
    if case .forward = action { return true }
    return false
}

/// The framing of a `.respond` response head action, nil for any other action.
func respondFraming(_ action: Exchange.ResponseHeadAction) -> ForwardedHead.Framing? {
    if case .respond(let framing) = action { return framing }
    return nil
}
