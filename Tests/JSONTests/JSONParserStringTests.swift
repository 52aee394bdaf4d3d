@testable import JSON
import XCTest

/// A string is read whole when it holds no escape and one piece at a time when it does: both
/// readings give the same text, and the same error at the same offset.
final class JSONParserStringTests: XCTestCase {
    private func parseString(_ literal: [UInt8]) -> Result<String, JSONSyntaxError> {
        do throws(JSONSyntaxError) {
            guard case .string(let text) = try JSONParser.parse(literal).kind else {
                return .failure(JSONSyntaxError(offset: -1, message: "not a string"))
            }
            return .success(text)
        } catch {
            return .failure(error)
        }
    }

    /// What the bytes between the quotes mean, read one byte or escape at a time (the reading
    /// before strings without escapes were taken whole).
    private func expected(_ body: [UInt8]) -> Result<String, JSONSyntaxError> {
        var utf8: [UInt8] = []
        var index = 0
        while index < body.count {
            let byte = body[index]
            if byte < 0x20 {
                return .failure(JSONSyntaxError(offset: index + 1, message: "control character in a string (write it as an escape like \\n)"))
            }
            if byte == UInt8(ascii: "\\") {
                let escaped: UInt8 = switch body[index + 1] {
                case UInt8(ascii: "n"): 0x0A
                case UInt8(ascii: "t"): 0x09
                default: body[index + 1]
                }
                utf8.append(escaped)
                index += 2
                continue
            }
            utf8.append(byte)
            index += 1
        }
        guard let text = String(validating: utf8, as: UTF8.self) else {
            return .failure(JSONSyntaxError(offset: 0, message: "string is not valid UTF-8"))
        }
        return .success(text)
    }

    private func assertSame(_ body: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let literal = [UInt8(ascii: "\"")] + body + [UInt8(ascii: "\"")]
        switch (parseString(literal), expected(body)) {
        case (.success(let read), .success(let wanted)):
            XCTAssertEqual(read, wanted, "\(body)", file: file, line: line)
        case (.failure(let read), .failure(let wanted)):
            XCTAssertEqual(read.message, wanted.message, "\(body)", file: file, line: line)
            XCTAssertEqual(read.offset, wanted.offset, "\(body)", file: file, line: line)
        case (let read, let wanted):
            XCTFail("\(body): read \(read), expected \(wanted)", file: file, line: line)
        }
    }

    func testStringsWithAndWithoutEscapesReadAsOneByteAtATime() {
        // Plain ASCII, escapes, multi-byte UTF-8, bytes that are no UTF-8, control characters.
        let pieces: [[UInt8]] = [
            Array("svc-00003".utf8), Array("/api/".utf8), Array("é".utf8), Array("💡".utf8), Array("\\n".utf8),
            Array("\\\"".utf8), Array("\\\\".utf8), Array("\\/".utf8), Array("\\t".utf8), [0xC3], [0xFF], [0x01], [0x1F],
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...6, using: &generator)
            assertSame((0..<count).flatMap { _ in pieces.randomElement(using: &generator)! })
        }
    }

    func testAnEmptyStringAndAStringAtTheEndOfInput() {
        XCTAssertEqual(try JSONParser.parse(Array(#""""#.utf8)).kind.stringValue, "")
        XCTAssertEqual(try JSONParser.parse(Array(#"["a","b\"c"]"#.utf8)).lastOffset, 11)
    }

    func testAnUnterminatedStringIsReportedAtItsQuote() {
        for text in [#"["abc"#, #"["ab\"c"#, #"[""#] {
            XCTAssertThrowsError(try JSONParser.parse(Array(text.utf8))) { error in
                XCTAssertEqual((error as? JSONSyntaxError)?.message, "unterminated string", text)
                XCTAssertEqual((error as? JSONSyntaxError)?.offset, 1, text)
            }
        }
    }

    func testAMissingClosingBracketIsNamedInTheError() {
        XCTAssertThrowsError(try JSONParser.parse(Array(#"["a" "b"]"#.utf8))) { error in
            XCTAssertEqual((error as? JSONSyntaxError)?.message, "expected ',' or ']' after an array element, found '\"'")
        }
        XCTAssertThrowsError(try JSONParser.parse(Array(#"{"a":1,}"#.utf8))) { error in
            XCTAssertEqual((error as? JSONSyntaxError)?.message, "trailing comma before '}'")
        }
    }
}

extension JSONNode.Kind {
    fileprivate var stringValue: String? {
        if case .string(let text) = self { text } else { nil }
    }
}
