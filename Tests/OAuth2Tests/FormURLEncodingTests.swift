import OAuth2
import XCTest

/// `application/x-www-form-urlencoded` as RFC 6749 Appendix B and the WHATWG URL standard
/// write it.
final class FormURLEncodingTests: XCTestCase {
    func testUnreservedCharactersAreKept() {
        XCTAssertEqual(FormURLEncoding.encode("AZaz09-._~"), "AZaz09-._~")
    }

    func testSpaceBecomesPlus() {
        XCTAssertEqual(FormURLEncoding.encode("orders.read orders.write"), "orders.read+orders.write")
    }

    func testRFC6749AppendixBExample() {
        XCTAssertEqual(FormURLEncoding.encode(" %&+£€"), "+%25%26%2B%C2%A3%E2%82%AC")
    }

    func testReservedAndControlCharactersArePercentEncodedInUpperCase() {
        XCTAssertEqual(FormURLEncoding.encode(":/?#[]@!$'()*,;=\n"), "%3A%2F%3F%23%5B%5D%40%21%24%27%28%29%2A%2C%3B%3D%0A")
    }

    func testFieldsAreJoinedInOrderAndMayRepeat() {
        XCTAssertEqual(FormURLEncoding.encode([("resource", "https://a/"), ("resource", "https://b/"), ("x y", "1&2")]),
                       "resource=https%3A%2F%2Fa%2F&resource=https%3A%2F%2Fb%2F&x+y=1%262")
    }

    func testAppendingEncodesBytesIntoABuffer() {
        var out = Array("?access_token=".utf8)
        FormURLEncoding.append(encoding: "a/b c~".utf8, to: &out)
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "?access_token=a%2Fb+c~")
    }

    func testDecodeUndoesEncode() {
        let pairs = FormURLEncoding.decode("access_token=a%2Bb+c&expires_in=60&flag&bad=%zz%4")
        XCTAssertEqual(pairs.map(\.name), ["access_token", "expires_in", "flag", "bad"])
        XCTAssertEqual(pairs.map(\.value), ["a+b c", "60", "", "%zz%4"])
    }
}
