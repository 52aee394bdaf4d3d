import JSON
import XCTest

/// What the relay's one JSON reader gives the readers of IdP answers, JOSE and the admin API.
final class JSONValueTests: XCTestCase {
    private func parse(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    func testIntegersStayExactAndOtherNumbersAreDoubles() throws {
        XCTAssertEqual(try parse("9007199254740993"), .integer(9_007_199_254_740_993))
        XCTAssertEqual(try parse("-0"), .integer(0))
        XCTAssertEqual(try parse("3600.0"), .number(3600))
        XCTAssertEqual(try parse("1e3"), .number(1000))
        XCTAssertEqual(try parse("123456789012345678901234567890"), .number(1.2345678901234568e29))
    }

    func testANumberBeyondADoubleIsNoJSON() {
        XCTAssertThrowsError(try parse(#"{"expires_in":1e400}"#)) { error in
            XCTAssertEqual((error as? JSONSyntaxError)?.message, "number out of range")
            XCTAssertEqual((error as? JSONSyntaxError)?.offset, 14)
        }
    }

    func testTrueIsNeverANumberAndOneIsNeverTrue() throws {
        XCTAssertNil(try parse("true").double)
        XCTAssertNil(try parse("true").integer)
        XCTAssertNil(try parse("1").bool)
        XCTAssertEqual(try parse("1").double, 1)
        XCTAssertEqual(try parse("false").bool, false)
    }

    func testIntegerDropsTheFractionOfANumber() throws {
        XCTAssertEqual(try parse("1700000000.9").integer, 1_700_000_000)
        XCTAssertNil(try parse("1e300").integer)
    }

    func testMembersKeepTheirOrderAndTheLastOfARepeatedNameCounts() throws {
        let value = try parse(#"{"b":1,"a":2,"b":3}"#)
        XCTAssertEqual(value.members?.map(\.name), ["b", "a", "b"])
        XCTAssertEqual(value["b"], .integer(3))
        XCTAssertEqual(value.dictionary, ["a": .integer(2), "b": .integer(3)])
        XCTAssertNil(try parse("[1]")["b"])
        XCTAssertNil(try parse("[1]").dictionary)
    }

    func testStringsIsForArraysOfStringsOnly() throws {
        XCTAssertEqual(try parse(#"["S256","plain"]"#).strings, ["S256", "plain"])
        XCTAssertEqual(try parse("[]").strings, [])
        XCTAssertNil(try parse(#"["S256",1]"#).strings)
        XCTAssertNil(try parse(#""S256""#).strings)
    }

    func testEscapesAndUnicodeAreRead() throws {
        XCTAssertEqual(try parse(#""a\"b\\c\u00e9\ud83d\ude00\n""#), .string("a\"b\\cé😀\n"))
    }

    func testTextThatIsNoJSONThrowsWithWhere() {
        for (text, offset) in [(#"{"a":1,}"#, 7), ("{'a':1}", 1), ("[1] [2]", 4), ("NaN", 0), ("", 0)] {
            XCTAssertThrowsError(try parse(text), text) { error in
                XCTAssertEqual((error as? JSONSyntaxError)?.offset, offset, text)
            }
        }
    }

    func testSerializedIsCompactWithMembersInOrder() {
        let value = JSONValue.object([
            JSONMember("typ", .string("dpop+jwt")), JSONMember("iat", .integer(1_700_000_000)), JSONMember("n", .number(0.5)),
            JSONMember("ok", .bool(true)), JSONMember("none", .null), JSONMember("list", .array([.string("a\"\n"), .integer(-1)])),
        ])
        XCTAssertEqual(value.serialized, #"{"typ":"dpop+jwt","iat":1700000000,"n":0.5,"ok":true,"none":null,"list":["a\"\n",-1]}"#)
    }

    func testWhatIsWrittenReadsBackTheSame() throws {
        let value = JSONValue.object([JSONMember("s", .string("\u{1}é")), JSONMember("a", .array([.integer(Int64.min), .number(1.5)]))])
        XCTAssertEqual(try JSONValue(parsing: Array(value.serialized.utf8)), value)
    }
}
