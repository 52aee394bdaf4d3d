import Endpoints
import EventLoop
import FoundationEssentials
import HTTPClient
import Logging
import LoopTestSupport
import OAuth2
import SafeText
@testable import Tokens
import XCTest

/// An introspection endpoint on loopback that holds every request until the test answers it:
/// what no real server does on cue (the test needs the question under way while more callers
/// come). It records each request whole, for the test to compare byte for byte.
private final class HeldIntrospectionEndpoint: ByteStreamDelegate {
    private(set) var listener: TCPListener!
    private(set) var port: UInt16 = 0
    /// Each request received whole (head and body), in order.
    private(set) var requests: [String] = []
    private var pending: [ObjectIdentifier: [UInt8]] = [:]
    /// Connections whose request came whole, waiting for `answerAll`.
    private var held: [TCPStream] = []
    private var streams: [TCPStream] = []

    init(loop: EventLoop) throws {
        listener = try TCPListener(loop: loop, address: SocketAddress(ip: "127.0.0.1", port: 0)!, reusePort: false) { [unowned self] stream in
            stream.delegate = self
            stream.startReading()
            streams.append(stream)
        }
        port = try XCTUnwrap(listener.localAddress?.port)
    }

    var url: HTTPURL { HTTPURL(scheme: .http, host: "127.0.0.1", port: port, path: "/o/introspect/") }

    /// Answers every request held so far with `status` and the JSON `body`.
    func answerAll(status: Int = 200, reason: String = "OK", _ body: String) {
        let response = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n\(body)"
        for stream in held {
            Array(response.utf8).withUnsafeBytes { stream.write($0) }
            stream.closeAfterWrites()
        }
        held.removeAll()
    }

    func stop() {
        streams.forEach { $0.close() }
        listener.close()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard let tcp = stream as? TCPStream else { return }
        let id = ObjectIdentifier(tcp)
        pending[id, default: []].append(contentsOf: bytes)
        let text = String(decoding: pending[id]!, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n") else { return }
        let length = text[..<headEnd.lowerBound].split(separator: "\r\n")
            .first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int(String($0.dropFirst("content-length:".count).filter { $0 != " " })) } ?? 0
        guard text.utf8.count >= text[..<headEnd.upperBound].utf8.count + length else { return }
        requests.append(text)
        pending[id] = nil
        held.append(tcp)
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        stream.close()
    }
}

/// The token loop's introspections through IdPClient: one question on the wire for many callers
/// of one token, each caller's verdict its own, failures and the stop told to every caller.
final class IntrospectionsTests: XCTestCase {
    private let rules = IntrospectionRules(requiredScopes: ["orders.read"])
    private let identity = Identity(name: "orders", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/o/token/"),
                                    grant: .clientCredentials, clientAuth: .basic(id: "orders-relay", secret: Secret("s3cret")))

    private func introspections(_ test: LeakCheckedLoop, maximumInFlight: Int = Introspections.defaultMaximumInFlight)
        -> (IdPClient, Introspections) {
        let idp = IdPClient(loop: test.loop, limits: HTTPClientLimits(), logger: Logger(label: "test"), observer: nil)
        return (idp, Introspections(idp: idp, logger: Logger(label: "test"), maximumInFlight: maximumInFlight))
    }

    /// The request exactly as RFC 7662 §2.1 and the identity's Basic authentication make it.
    private func expectedRequest(token: String, port: UInt16) -> String {
        let body = "token=\(token)&token_type_hint=access_token"
        return "POST /o/introspect/ HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            + "Accept: application/json\r\nAuthorization: Basic b3JkZXJzLXJlbGF5OnMzY3JldA==\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n\(body)"
    }

    func testCallersOfOneTokenShareOneQuestionAndEachGetsItsVerdict() throws {
        let test = try LeakCheckedLoop()
        let endpoint = try HeldIntrospectionEndpoint(loop: test.loop)
        let (_, introspections) = introspections(test)
        let tokens = IdentityTokens(identity: identity, slot: 0)
        var outcomes: [Int: IntrospectionOutcome] = [:]
        introspections.introspect(Secret("opaque-1"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { outcomes[0] = $0 }
        test.run(until: "the endpoint holds the question") { endpoint.requests.count == 1 }
        // More callers while the question is under way: a stricter route, and a DPoP caller.
        introspections.introspect(Secret("opaque-1"), for: tokens, at: endpoint.url, rules: IntrospectionRules(requiredScopes: ["orders.admin"]),
                                  presentedAs: .bearer) { outcomes[1] = $0 }
        introspections.introspect(Secret("opaque-1"), for: tokens, at: endpoint.url, rules: rules,
                                  presentedAs: .dpop(proofKeyThumbprint: "jkt-1"), maximumReuseSeconds: 30) { outcomes[2] = $0 }
        test.run(forMilliseconds: 50)
        XCTAssertEqual(endpoint.requests, [expectedRequest(token: "opaque-1", port: endpoint.port)])
        XCTAssertEqual(introspections.inFlight, 1)
        XCTAssertTrue(outcomes.isEmpty)

        let expiry = Int64(Date().timeIntervalSince1970) + 3600
        endpoint.answerAll(#"{"active":true,"scope":"orders.read","exp":\#(expiry),"client_id":"orders-cc"}"#)
        test.run(until: "every caller heard") { outcomes.count == 3 }
        guard case .answered(let response, verdict: .accepted(let token), reusableSeconds: let reuse)? = outcomes[0] else { return XCTFail("\(String(describing: outcomes[0]))") }
        XCTAssertEqual(token.clientID, "orders-cc")
        XCTAssertEqual(reuse, IntrospectionResponse.defaultMaximumReuseSeconds)
        XCTAssertEqual(outcomes[1], .answered(response, verdict: .insufficientScope(missing: ["orders.admin"]), reusableSeconds: 300))
        XCTAssertEqual(outcomes[2], .answered(response, verdict: .invalidToken(.binding(.unboundToken)), reusableSeconds: 30))
        XCTAssertEqual(introspections.inFlight, 0)

        // Once answered, the same token is asked about again (reuse is the caller's cache's),
        // and another token is another question.
        var later = 0
        introspections.introspect(Secret("opaque-1"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { _ in later += 1 }
        introspections.introspect(Secret("opaque 2"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { _ in later += 1 }
        test.run(until: "both questions arrived") { endpoint.requests.count == 3 }
        XCTAssertEqual(Array(endpoint.requests[1...]).sorted(), [expectedRequest(token: "opaque+2", port: endpoint.port),
                                                                 expectedRequest(token: "opaque-1", port: endpoint.port)].sorted())
        endpoint.answerAll(#"{"active":false}"#)
        test.run(until: "both answered") { later == 2 }
        endpoint.stop()
        test.closeAndCheckForLeaks()
    }

    /// The relay's own client refused: no verdict on the caller's token, every caller told.
    func testAFailureReachesEveryCaller() throws {
        let test = try LeakCheckedLoop()
        let endpoint = try HeldIntrospectionEndpoint(loop: test.loop)
        let (_, introspections) = introspections(test)
        let tokens = IdentityTokens(identity: identity, slot: 0)
        var outcomes: [IntrospectionOutcome] = []
        for _ in 0..<3 {
            introspections.introspect(Secret("opaque-1"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { outcomes.append($0) }
        }
        test.run(until: "the endpoint holds the question") { endpoint.requests.count == 1 }
        endpoint.answerAll(status: 401, reason: "Unauthorized", #"{"error":"invalid_client"}"#)
        test.run(until: "every caller heard") { outcomes.count == 3 }
        for outcome in outcomes {
            guard case .failed(let error) = outcome else { return XCTFail("\(outcome)") }
            XCTAssertEqual(error.oauthError?.code.rawValue, "invalid_client")
            XCTAssertEqual(error.status, 401)
        }
        XCTAssertEqual(endpoint.requests.count, 1)
        endpoint.stop()
        test.closeAndCheckForLeaks()
    }

    func testStoppingTellsEveryCaller() throws {
        let test = try LeakCheckedLoop()
        let endpoint = try HeldIntrospectionEndpoint(loop: test.loop)
        let (idp, introspections) = introspections(test)
        let tokens = IdentityTokens(identity: identity, slot: 0)
        var outcomes: [IntrospectionOutcome] = []
        introspections.introspect(Secret("opaque-1"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { outcomes.append($0) }
        introspections.introspect(Secret("opaque-1"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { outcomes.append($0) }
        test.run(until: "the endpoint holds the question") { endpoint.requests.count == 1 }
        idp.stop(lettingFinish: { _ in true })
        test.run(until: "every caller heard") { outcomes.count == 2 }
        XCTAssertEqual(outcomes, [.stopped, .stopped])
        introspections.introspect(Secret("opaque-3"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { outcomes.append($0) }
        XCTAssertEqual(outcomes.last, .stopped, "a question after the stop")
        XCTAssertEqual(introspections.inFlight, 0)
        endpoint.stop()
        test.closeAndCheckForLeaks()
    }

    func testBeyondTheMaximumNothingIsSent() throws {
        let test = try LeakCheckedLoop()
        let endpoint = try HeldIntrospectionEndpoint(loop: test.loop)
        let (_, introspections) = introspections(test, maximumInFlight: 1)
        let tokens = IdentityTokens(identity: identity, slot: 0)
        var outcomes: [String: IntrospectionOutcome] = [:]
        introspections.introspect(Secret("opaque-1"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { outcomes["1"] = $0 }
        introspections.introspect(Secret("opaque-2"), for: tokens, at: endpoint.url, rules: rules, presentedAs: .bearer) { outcomes["2"] = $0 }
        XCTAssertEqual(outcomes["2"], .overloaded)
        test.run(until: "the endpoint holds the question") { endpoint.requests.count == 1 }
        test.run(forMilliseconds: 50)
        XCTAssertEqual(endpoint.requests, [expectedRequest(token: "opaque-1", port: endpoint.port)])
        endpoint.answerAll(#"{"active":false}"#)
        test.run(until: "the first caller heard") { outcomes["1"] != nil }
        XCTAssertEqual(outcomes["1"], .answered(.inactive, verdict: .invalidToken(.inactive), reusableSeconds: 0))
        endpoint.stop()
        test.closeAndCheckForLeaks()
    }
}
