import RedisProtocol
import XCTest

/// RESP2 replies read from bytes as the network delivers them: whole, split at every byte
/// boundary, several in one read; and bytes no server should send refused with an error.
final class RESPReaderTests: XCTestCase {
    /// The examples of the RESP2 specification (redis.io/docs/reference/protocol-spec), and the
    /// replies the relay's scripts get.
    static let examples: [(bytes: String, reply: RedisReply)] = [
        ("+OK\r\n", .status("OK")),
        ("-Error message\r\n", .error("Error message")),
        ("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
         .error("WRONGTYPE Operation against a key holding the wrong kind of value")),
        (":0\r\n", .integer(0)),
        (":1000\r\n", .integer(1000)),
        (":-42\r\n", .integer(-42)),
        (":9223372036854775807\r\n", .integer(.max)),
        (":-9223372036854775807\r\n", .integer(-.max)),
        ("$5\r\nhello\r\n", .bulk(Array("hello".utf8))),
        ("$0\r\n\r\n", .bulk([])),
        ("$-1\r\n", .null),
        ("$4\r\na\r\nb\r\n", .bulk(Array("a\r\nb".utf8))),
        ("*0\r\n", .array([])),
        ("*-1\r\n", .null),
        ("*2\r\n$5\r\nhello\r\n$5\r\nworld\r\n", .array([.bulk(Array("hello".utf8)), .bulk(Array("world".utf8))])),
        ("*3\r\n:1\r\n:2\r\n:3\r\n", .array([.integer(1), .integer(2), .integer(3)])),
        ("*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n$5\r\nhello\r\n",
         .array([.integer(1), .integer(2), .integer(3), .integer(4), .bulk(Array("hello".utf8))])),
        ("*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*2\r\n+Hello\r\n-World\r\n",
         .array([.array([.integer(1), .integer(2), .integer(3)]), .array([.status("Hello"), .error("World")])])),
        ("*3\r\n$5\r\nhello\r\n$-1\r\n$5\r\nworld\r\n", .array([.bulk(Array("hello".utf8)), .null, .bulk(Array("world".utf8))])),
        ("*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$3\r\nkey\r\n",
         .array([.bulk(Array("message".utf8)), .bulk(Array("chan".utf8)), .bulk(Array("key".utf8))])),
        ("*2\r\n*-1\r\n*0\r\n", .array([.null, .array([])])),
        ("*1\r\n*1\r\n*1\r\n:7\r\n", .array([.array([.array([.integer(7)])])])),
    ]

    private func readAll(_ pieces: [[UInt8]], limits: RESPReader.Limits = RESPReader.Limits()) throws -> [RedisReply] {
        var reader = RESPReader(limits: limits)
        var replies: [RedisReply] = []
        for piece in pieces {
            reader.feed(piece)
            while let reply = try reader.next() { replies.append(reply) }
        }
        return replies
    }

    func testEachExampleReadWhole() throws {
        for (text, reply) in Self.examples {
            XCTAssertEqual(try readAll([Array(text.utf8)]), [reply], text.debugDescription)
        }
    }

    func testEachExampleSplitAtEveryByteBoundary() throws {
        for (text, reply) in Self.examples {
            let bytes = Array(text.utf8)
            for cut in 1..<bytes.count {
                XCTAssertEqual(try readAll([Array(bytes[..<cut]), Array(bytes[cut...])]), [reply], "\(text.debugDescription) cut at \(cut)")
            }
        }
    }

    func testEachExampleFedOneByteAtATime() throws {
        for (text, reply) in Self.examples {
            XCTAssertEqual(try readAll(Array(text.utf8).map { [$0] }), [reply], text.debugDescription)
        }
    }

    func testAllExamplesInOneReadComeOutInOrder() throws {
        let bytes = Self.examples.flatMap { Array($0.bytes.utf8) }
        XCTAssertEqual(try readAll([bytes]), Self.examples.map(\.reply))
        // And every split of the whole stream in two gives the same replies.
        for cut in stride(from: 1, to: bytes.count, by: 1) {
            XCTAssertEqual(try readAll([Array(bytes[..<cut]), Array(bytes[cut...])]), Self.examples.map(\.reply), "cut at \(cut)")
        }
    }

    func testAnIncompleteReplyWaitsAndKeepsItsBytes() throws {
        var reader = RESPReader()
        reader.feed(Array("*2\r\n$5\r\nhel".utf8))
        XCTAssertNil(try reader.next())
        XCTAssertEqual(reader.bufferedCount, 3, "the headers are read; the body's first bytes wait")
        reader.feed(Array("lo\r\n:1\r\n+OK".utf8))
        XCTAssertEqual(try reader.next(), .array([.bulk(Array("hello".utf8)), .integer(1)]))
        XCTAssertNil(try reader.next())
        reader.feed(Array("\r\n".utf8))
        XCTAssertEqual(try reader.next(), .status("OK"))
        XCTAssertNil(try reader.next())
        XCTAssertEqual(reader.bufferedCount, 0)
    }

    func testBinaryBulkBytesAreKeptAsTheyAre() throws {
        let body: [UInt8] = [0, 13, 10, 255, 36, 42]
        XCTAssertEqual(try readAll([Array("$6\r\n".utf8) + body + [13, 10]]), [.bulk(body)])
    }

    func testABulkStringAtTheLimitIsRead() throws {
        let limits = RESPReader.Limits(maxBulkLength: 8)
        XCTAssertEqual(try readAll([Array("$8\r\n12345678\r\n".utf8)], limits: limits), [.bulk(Array("12345678".utf8))])
    }

    func testManyRepliesLongerThanTheCompactionThresholdStayInOrder() throws {
        var reader = RESPReader()
        var expected: [RedisReply] = []
        var stream: [UInt8] = []
        for index in 0..<2000 {
            stream += Array(":\(index)\r\n$3\r\nabc\r\n".utf8)
            expected += [.integer(Int64(index)), .bulk(Array("abc".utf8))]
        }
        var replies: [RedisReply] = []
        var offset = 0
        while offset < stream.count {
            let end = min(offset + 1000, stream.count)
            reader.feed(Array(stream[offset..<end]))
            while let reply = try reader.next() { replies.append(reply) }
            offset = end
        }
        XCTAssertEqual(replies, expected)
        XCTAssertEqual(reader.bufferedCount, 0)
    }

    // MARK: - Refusals: what no server should send ends the reading with an error

    static let refusals: [(bytes: String, limits: RESPReader.Limits, error: RESPError, message: String)] = [
        ("!oops\r\n", RESPReader.Limits(), .unknownType(0x21), "not a RESP2 reply: unknown type byte 0x21"),
        (">3\r\n", RESPReader.Limits(), .unknownType(0x3E), "not a RESP2 reply: unknown type byte 0x3E"),
        ("\r\n", RESPReader.Limits(), .emptyLine, "not a RESP2 reply: an empty line"),
        (":12a\r\n", RESPReader.Limits(), .invalidNumber("integer"), "the integer of a reply is not a valid number"),
        (":\r\n", RESPReader.Limits(), .invalidNumber("integer"), "the integer of a reply is not a valid number"),
        (":+1\r\n", RESPReader.Limits(), .invalidNumber("integer"), "the integer of a reply is not a valid number"),
        (":9223372036854775808\r\n", RESPReader.Limits(), .invalidNumber("integer"), "the integer of a reply is not a valid number"),
        (":01\r\n", RESPReader.Limits(), .invalidNumber("integer"), "the integer of a reply is not a valid number"),
        ("$-2\r\n", RESPReader.Limits(), .invalidNumber("bulk length"), "the bulk length of a reply is not a valid number"),
        ("$ 3\r\nabc\r\n", RESPReader.Limits(), .invalidNumber("bulk length"), "the bulk length of a reply is not a valid number"),
        ("*-5\r\n", RESPReader.Limits(), .invalidNumber("array count"), "the array count of a reply is not a valid number"),
        ("$9\r\n123456789\r\n", RESPReader.Limits(maxBulkLength: 8), .overLimit("bulk length", limit: 8),
         "the bulk length of a reply is over the limit of 8"),
        ("$99999999999\r\n", RESPReader.Limits(), .overLimit("bulk length", limit: 16 * 1024 * 1024),
         "the bulk length of a reply is over the limit of 16777216"),
        ("*5\r\n", RESPReader.Limits(maxArrayCount: 4), .overLimit("array count", limit: 4), "the array count of a reply is over the limit of 4"),
        ("*1\r\n*1\r\n*1\r\n:1\r\n", RESPReader.Limits(maxDepth: 2), .tooDeep(limit: 2), "a reply nests arrays deeper than 2"),
        ("$3\r\nabcd\r\n", RESPReader.Limits(), .bulkNotTerminated, "a bulk string of a reply is not followed by CRLF"),
        ("+0123456789\r\n", RESPReader.Limits(maxLineLength: 8), .lineTooLong(limit: 8), "a reply line longer than 8 bytes"),
        ("+0123456789", RESPReader.Limits(maxLineLength: 8), .lineTooLong(limit: 8), "a reply line longer than 8 bytes"),
        // The bulk string would end the reply at byte 16: refused at its length, before its body.
        ("*2\r\n:1\r\n$2\r\nab\r\n", RESPReader.Limits(maxReplyBytes: 15), .overLimit("size in bytes", limit: 15),
         "the size in bytes of a reply is over the limit of 15"),
        ("*3\r\n:1\r\n:2\r\n:3\r\n", RESPReader.Limits(maxReplyBytes: 15), .overLimit("size in bytes", limit: 15),
         "the size in bytes of a reply is over the limit of 15"),
    ]

    func testEachRefusalWithItsMessage() {
        for (text, limits, error, message) in Self.refusals {
            XCTAssertThrowsError(try readAll([Array(text.utf8)], limits: limits), text.debugDescription) { thrown in
                XCTAssertEqual(thrown as? RESPError, error, text.debugDescription)
                XCTAssertEqual("\(thrown)", message)
            }
        }
    }

    func testEachRefusalAlsoWhenFedOneByteAtATime() {
        for (text, limits, error, _) in Self.refusals {
            XCTAssertThrowsError(try readAll(Array(text.utf8).map { [$0] }, limits: limits), text.debugDescription) { thrown in
                XCTAssertEqual(thrown as? RESPError, error, text.debugDescription)
            }
        }
    }

    /// Nested arrays within every other limit stream `:1` without end: the whole reply is bounded,
    /// each reply counted anew.
    func testOneReplysBytesAreBoundedAndEachReplyCountsAnew() throws {
        let limits = RESPReader.Limits(maxArrayCount: 4, maxDepth: 3, maxReplyBytes: 100)
        var reader = RESPReader(limits: limits)
        // 4 x 4 x 4 integers: 64 x 4 bytes of `:1\r\n` plus the headers, over 100.
        reader.feed(Array("*4\r\n".utf8))
        var refused: RESPError?
        for _ in 0..<4 {
            reader.feed(Array("*4\r\n".utf8))
            for _ in 0..<4 { reader.feed(Array("*4\r\n".utf8) + Array(repeating: Array(":1\r\n".utf8), count: 4).flatMap { $0 }) }
            do throws(RESPError) {
                let reply = try reader.next()
                XCTAssertNil(reply)
            } catch {
                refused = error
                break
            }
        }
        XCTAssertEqual(refused, .overLimit("size in bytes", limit: 100))
        // Replies of 96 bytes each, one after the other, all fit.
        let reply = "*4\r\n" + String(repeating: "$19\r\n0123456789012345678\r\n", count: 3) + ":12345678901\r\n"
        XCTAssertEqual(Array(reply.utf8).count, 96)
        XCTAssertEqual(try readAll([Array((reply + reply + reply).utf8)], limits: limits).count, 3)
    }

    func testAReplyAtTheLineLimitIsRead() throws {
        XCTAssertEqual(try readAll([Array("+01234567\r\n".utf8)], limits: RESPReader.Limits(maxLineLength: 8)), [.status("01234567")])
    }

    func testAfterAnErrorTheReaderAnswersItAgainAndReadsNothingMore() throws {
        var reader = RESPReader()
        reader.feed(Array("+OK\r\n!\r\n+OK\r\n".utf8))
        XCTAssertEqual(try reader.next(), .status("OK"))
        XCTAssertThrowsError(try reader.next()) { XCTAssertEqual($0 as? RESPError, .unknownType(0x21)) }
        reader.feed(Array("+OK\r\n".utf8))
        XCTAssertThrowsError(try reader.next()) { XCTAssertEqual($0 as? RESPError, .unknownType(0x21)) }
        XCTAssertEqual(reader.bufferedCount, 0)
    }

    func testAClaimedHugeArrayReservesNothingUntilItsElementsArrive() throws {
        var reader = RESPReader()
        reader.feed(Array("*65536\r\n:1\r\n".utf8))
        XCTAssertNil(try reader.next())
    }

    func testErrorTextsNeverQuoteTheBytes() {
        XCTAssertThrowsError(try readAll([Array("$3\r\nsecretvalue\r\n".utf8)])) { thrown in
            XCTAssertFalse("\(thrown)".contains("secret"))
        }
    }
}
