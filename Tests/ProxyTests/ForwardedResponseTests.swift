import Config
@testable import Proxy
import SafeText
import XCTest

/// Checks that the upstream's response with head `response` (then `body`) is relayed to the
/// client with head `expected`.
private func assertRelayed(_ response: [String], body: String = "", as expected: [String], framing: ForwardedHead.Framing,
                           keepAlive: Bool = true, clientVersionMinor: UInt8 = 1,
                           file: StaticString = #filePath, line: UInt = #line) {
    let parsed = parsedHead(head(response) + body, kind: .response, file: file, line: line)
    let relayed = written {
        ForwardedHead.writeResponse(parsed, framing: framing, keepAlive: keepAlive, clientVersionMinor: clientVersionMinor,
                                    viaSuffix: viaSuffix, into: &$0)
    }
    XCTAssertEqual(relayed, head(expected), file: file, line: line)
}

/// What the relay writes to end a chunked body whose message (head, chunks, trailers) is `message`.
private func lastChunk(of message: String, file: StaticString = #filePath, line: UInt = #line) -> String {
    let parsed = parsedHead(message, kind: .response, file: file, line: line)
    return written { ForwardedHead.writeLastChunk(trailersOf: parsed, into: &$0) }
}

/// What the relay writes to the client for the upstream's interim response `interim`.
private func relayedInterim(_ interim: [String], file: StaticString = #filePath, line: UInt = #line) -> String {
    let parsed = parsedHead(head(interim), kind: .response, file: file, line: line)
    return written { ForwardedHead.writeInterim(parsed, into: &$0) }
}

final class ForwardedResponseTests: XCTestCase {
    private let ok = ["HTTP/1.1 200 OK", "Content-Type: text/plain", "Content-Length: 5"]

    func testEndToEndFieldsAreCopiedAndViaIsAppended() {
        assertRelayed(["HTTP/1.1 200 OK", "content-type: text/plain", "Set-Cookie: a=1", "Set-Cookie: b=2",
                       "Via: 1.1 backend", "Content-Length: 5"], body: "hello",
                      as: ["HTTP/1.1 200 OK", "content-type: text/plain", "Set-Cookie: a=1", "Set-Cookie: b=2",
                           "Via: 1.1 backend", "Content-Length: 5", "Via: 1.1 oauth-relay"],
                      framing: .contentLength)
    }

    func testAListedOriginsCORSFieldsReplaceTheUpstreamsOwn() {
        let rules = CORSRules(BrowserAccess(allowOrigins: ["http://localhost:3000"], exposeHeaders: ["X-Request-Id"]))
        let parsed = parsedHead(head(["HTTP/1.1 200 OK", "Access-Control-Allow-Origin: *", "access-control-allow-credentials: false",
                                      "Access-Control-Expose-Headers: X-Secret", "Content-Length: 0", "X-Access-Control: kept"]),
                                kind: .response)
        let relayed = written {
            ForwardedHead.writeResponse(parsed, framing: .contentLength, keepAlive: true, clientVersionMinor: 1, viaSuffix: viaSuffix,
                                        cors: rules.responseLines[0], into: &$0)
        }
        XCTAssertEqual(relayed, head(["HTTP/1.1 200 OK", "Content-Length: 0", "X-Access-Control: kept",
                                      "Access-Control-Allow-Origin: http://localhost:3000", "Access-Control-Allow-Credentials: true",
                                      "Vary: Origin", "Access-Control-Expose-Headers: X-Request-Id", "Via: 1.1 oauth-relay"]))
        // Without a listed origin, the upstream's fields pass as they came.
        assertRelayed(["HTTP/1.1 200 OK", "Access-Control-Allow-Origin: *", "Content-Length: 0"],
                      as: ["HTTP/1.1 200 OK", "Access-Control-Allow-Origin: *", "Content-Length: 0", "Via: 1.1 oauth-relay"],
                      framing: .contentLength)
    }

    func testHopByHopFieldsAreDropped() {
        assertRelayed(["HTTP/1.1 204 No Content", "Connection: keep-alive, X-Hop", "X-Hop: 1", "Keep-Alive: timeout=5",
                       "Proxy-Connection: keep-alive", "Upgrade: h2c", "X-Kept: 2"],
                      as: ["HTTP/1.1 204 No Content", "X-Kept: 2", "Via: 1.1 oauth-relay"],
                      framing: .none)
    }

    func testConnectionCloseWhenTheConnectionIsNotKeptAlive() {
        assertRelayed(ok, body: "hello",
                      as: ok + ["Connection: close", "Via: 1.1 oauth-relay"],
                      framing: .contentLength, keepAlive: false)
    }

    func testConnectionCloseAndNoLengthForACloseDelimitedBody() {
        assertRelayed(ok, body: "hello",
                      as: ["HTTP/1.1 200 OK", "Content-Type: text/plain", "Connection: close", "Via: 1.1 oauth-relay"],
                      framing: .close, clientVersionMinor: 0)
    }

    func testHTTP10ClientKeptAliveIsToldKeepAlive() {
        assertRelayed(ok, body: "hello",
                      as: ok + ["Connection: keep-alive", "Via: 1.1 oauth-relay"],
                      framing: .contentLength, clientVersionMinor: 0)
    }

    func testRechunkedBodyGetsChunkedFramingInsteadOfTheUpstreamsLength() {
        assertRelayed(ok, body: "hello",
                      as: ["HTTP/1.1 200 OK", "Content-Type: text/plain", "Transfer-Encoding: chunked", "Via: 1.1 oauth-relay"],
                      framing: .chunked)
    }

    func testChunkedUpstreamBodyGetsTheRelaysOwnChunkedFramingOnce() {
        assertRelayed(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Content-Type: text/plain"],
                      as: ["HTTP/1.1 200 OK", "Content-Type: text/plain", "Transfer-Encoding: chunked", "Via: 1.1 oauth-relay"],
                      framing: .chunked)
    }

    func testBodylessResponseKeepsItsContentLength() {
        assertRelayed(["HTTP/1.1 200 OK", "Content-Length: 42"],
                      as: ["HTTP/1.1 200 OK", "Content-Length: 42", "Via: 1.1 oauth-relay"],
                      framing: .none)
    }

    func testContentLengthIsWrittenInItsCanonicalForm() {
        assertRelayed(["HTTP/1.1 200 OK", "Content-Length: 005", "X-After: 1"], body: "hello",
                      as: ["HTTP/1.1 200 OK", "Content-Length: 5", "X-After: 1", "Via: 1.1 oauth-relay"],
                      framing: .contentLength)
        assertRelayed(["HTTP/1.1 200 OK", "Content-Length: 0042"],
                      as: ["HTTP/1.1 200 OK", "Content-Length: 42", "Via: 1.1 oauth-relay"], framing: .none)
    }

    func testSwitchingProtocolsGetsConnectionUpgradeAndItsUpgradeFields() {
        assertRelayed(["HTTP/1.1 101 Switching Protocols", "Connection: Upgrade", "Upgrade: websocket",
                       "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="],
                      as: ["HTTP/1.1 101 Switching Protocols", "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
                           "Connection: upgrade", "Upgrade: websocket", "Via: 1.1 oauth-relay"],
                      framing: .none)
    }

    func testViaNamesTheUpstreamsProtocolVersion() {
        assertRelayed(["HTTP/1.0 200 OK", "Content-Length: 5"], body: "hello",
                      as: ["HTTP/1.1 200 OK", "Content-Length: 5", "Via: 1.0 oauth-relay"],
                      framing: .contentLength)
    }

    func testInterimContinueIsRelayedAsReceived() {
        XCTAssertEqual(relayedInterim(["HTTP/1.1 100 Continue"]), head("HTTP/1.1 100 Continue"))
    }

    func testInterimResponseLosesItsHopByHopFields() {
        XCTAssertEqual(relayedInterim(["HTTP/1.1 103 Early Hints", "Link: </app.css>; rel=preload", "Connection: X-Hop", "X-Hop: 1"]),
                       head("HTTP/1.1 103 Early Hints", "Link: </app.css>; rel=preload"))
    }

    func testLastChunkWithoutTrailersIsAZeroChunkAndAnEmptyLine() {
        XCTAssertEqual(lastChunk(of: head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + "5\r\nhello\r\n0\r\n\r\n"),
                       "0\r\n\r\n")
    }

    func testLastChunkCarriesTheTrailersWithoutHopByHopFields() {
        let message = head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + "5\r\nhello\r\n"
            + head("0", "X-Checksum: abc", "Keep-Alive: timeout=5", "X-Digest: sha-256=x")
        XCTAssertEqual(lastChunk(of: message), head("0", "X-Checksum: abc", "X-Digest: sha-256=x"))
    }
}
