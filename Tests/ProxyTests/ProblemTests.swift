import Foundation
@testable import Proxy
import HTTPFields
import SafeText
import XCTest

/// The response `problem` writes, split at the empty line into head and body.
private func response(_ problem: Problem, keepAlive: Bool) -> (head: String, body: String) {
    let text = written { problem.write(keepAlive: keepAlive, viaSuffix: viaSuffix, into: &$0) }
    guard let end = text.range(of: "\r\n\r\n") else { return (text, "") }
    return (String(text[..<end.upperBound]), String(text[end.upperBound...]))
}

/// `text` parsed by Foundation as a JSON object; fails the test when it is not one.
private func jsonObject(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> NSDictionary {
    do {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        guard let dictionary = object as? NSDictionary else {
            XCTFail("not a JSON object: \(text)", file: file, line: line)
            return [:]
        }
        return dictionary
    } catch {
        XCTFail("not JSON (\(error)): \(text)", file: file, line: line)
        return [:]
    }
}

final class ProblemTests: XCTestCase {
    func testBodyIsAJSONProblemWithTypeTitleStatusDetailAndRoute() {
        let body = response(.badGateway("the upstream closed the connection", route: "orders"), keepAlive: true).body
        XCTAssertEqual(jsonObject(body), [
            "type": "urn:oauth-relay:problem:bad-gateway", "title": "Bad Gateway", "status": 502,
            "detail": "the upstream closed the connection", "route": "orders",
        ] as NSDictionary)
    }

    func testBodyHasNoRouteWhenNoRouteMatched() {
        let body = response(.noRoute(), keepAlive: true).body
        XCTAssertEqual(jsonObject(body), [
            "type": "urn:oauth-relay:problem:no-route", "title": "No Route", "status": 404,
            "detail": "no route matches this host and path",
        ] as NSDictionary)
    }

    func testDetailWithQuotesAndControlCharactersStaysValidJSON() {
        let detail = "bad \"header\" \\ value\r\n\u{1}"
        XCTAssertEqual(jsonObject(response(.badRequest(detail), keepAlive: true).body)["detail"] as? String, detail)
    }

    func testHeadNamesTheProblemMediaTypeAndTheExactBodyLength() {
        let (sentHead, body) = response(.noRoute(), keepAlive: true)
        XCTAssertEqual(sentHead, head("HTTP/1.1 404 No Route", "Content-Type: application/problem+json",
                                      "Content-Length: \(body.utf8.count)", "Cache-Control: no-store",
                                      "Via: 1.1 oauth-relay"))
    }

    func testConnectionCloseIsWrittenWhenTheConnectionIsNotKeptAlive() {
        let (sentHead, body) = response(.headerTimeout(), keepAlive: false)
        XCTAssertEqual(sentHead, head("HTTP/1.1 408 Request Timeout", "Content-Type: application/problem+json",
                                      "Content-Length: \(body.utf8.count)", "Cache-Control: no-store",
                                      "Connection: close", "Via: 1.1 oauth-relay"))
    }

    func testMethodNotAllowedNamesTheAllowedMethods() {
        let (sentHead, body) = response(.methodNotAllowed(), keepAlive: true)
        XCTAssertEqual(sentHead, head("HTTP/1.1 405 Method Not Allowed", "Content-Type: application/problem+json",
                                      "Content-Length: \(body.utf8.count)", "Cache-Control: no-store",
                                      "Allow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", "Via: 1.1 oauth-relay"))
    }

    func testQuoteEscapesQuotesBackslashesAndControlCharacters() {
        XCTAssertEqual(JSONText.quote("a\"b\\c\n\r\t\u{0}\u{1f}é/"), #""a\"b\\c\n\r\t\u0000\u001fé/""#)
    }

    func testQuoteOfEveryControlCharacterParsesBackToIt() throws {
        let text = String(String.UnicodeScalarView((0..<0x20 as Range<UInt8>).map(Unicode.Scalar.init))) + "\"\\ end"
        let parsed = try JSONSerialization.jsonObject(with: Data("[\(JSONText.quote(text))]".utf8))
        XCTAssertEqual(parsed as? [String], [text])
    }

    func testOptionsAtMaxForwardsZeroIsAnsweredWithAllowAndNoBody() {
        let (head, body) = response(.finalRecipientOfOptions(), keepAlive: true)
        XCTAssertEqual(head, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nCache-Control: no-store\r\n"
                           + "Allow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\nVia: 1.1 oauth-relay\r\n\r\n")
        XCTAssertEqual(body, "")
    }

    func testTraceIsRefusedLikeConnect() {
        let (head, body) = response(.methodNotAllowed("TRACE"), keepAlive: true)
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"), head)
        XCTAssertTrue(head.contains("Allow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\n"), head)
        XCTAssertEqual(jsonObject(body)["detail"] as? String, "TRACE is not supported by this reverse proxy")
    }

    func testToAHeadRequestTheSameHeadGoesWithoutTheBody() {
        let toGet = response(.noRoute(), keepAlive: true)
        let toHead = written { Problem.noRoute().write(keepAlive: true, viaSuffix: viaSuffix, toHead: true, into: &$0) }
        XCTAssertEqual(toHead, toGet.head)
        XCTAssertFalse(toGet.body.isEmpty)
    }
}
