import CHiredis
import RedisProtocol
@testable import RedisClient
import XCTest

/// Replies as hiredis's own parser reads them from RESP bytes (the parser the connection uses,
/// here with no socket), converted to `RedisReply`; and commands as hiredis would format them.
final class RedisReplyConversionTests: XCTestCase {
    private func replies(_ resp: String) -> [RedisReply] {
        let reader = redisReaderCreate()!
        defer { redisReaderFree(reader) }
        let bytes = Array(resp.utf8)
        XCTAssertEqual(bytes.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { redisReaderFeed(reader, $0.baseAddress, $0.count) } },
                       REDIS_OK)
        var parsed: [RedisReply] = []
        while true {
            var reply: UnsafeMutableRawPointer?
            guard redisReaderGetReply(reader, &reply) == REDIS_OK, let reply else { break }
            parsed.append(RedisReply(UnsafePointer(reply.assumingMemoryBound(to: redisReply.self))))
            freeReplyObject(reply)
        }
        return parsed
    }

    func testEveryRESP2Type() {
        XCTAssertEqual(replies("+OK\r\n-ERR wrong\r\n:-7\r\n$3\r\nabc\r\n$-1\r\n*-1\r\n$0\r\n\r\n"),
                       [.status("OK"), .error("ERR wrong"), .integer(-7), .bulk(Array("abc".utf8)), .null, .null, .bulk([])])
    }

    func testABulkStringIsBinary() {
        XCTAssertEqual(replies("$4\r\n\u{0}\r\n\u{7f}\r\n"), [.bulk([0, 13, 10, 0x7f])])
    }

    func testNestedArraysWithNils() {
        XCTAssertEqual(replies("*4\r\n:1\r\n:2500\r\n$-1\r\n*2\r\n$1\r\nv\r\n$-1\r\n"),
                       [.array([.integer(1), .integer(2500), .null, .array([.bulk(Array("v".utf8)), .null])])])
    }

    func testAPartialReplyWaitsForTheRest() {
        XCTAssertEqual(replies("*2\r\n:1\r\n$5\r\nab"), [])
    }

    func testOurEncodingIsWhatHiredisFormats() {
        let arguments: [[UInt8]] = [Array("EVAL".utf8), Array("return 1".utf8), Array("0".utf8), [0, 255, 13, 10]]
        var formatted: UnsafeMutablePointer<CChar>?
        let pointers = arguments.map { bytes in
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, bytes.count))
            bytes.withUnsafeBytes { UnsafeMutableRawPointer(copy).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            return copy
        }
        defer { pointers.forEach { $0.deallocate() } }
        var constPointers = pointers.map { UnsafePointer<CChar>?($0) }
        var lengths = arguments.map(\.count)
        let length = redisFormatCommandArgv(&formatted, Int32(arguments.count), &constPointers, &lengths)
        defer { redisFreeCommand(formatted) }
        let hiredis = Array(UnsafeRawBufferPointer(start: formatted, count: Int(length)))
        XCTAssertEqual(RedisCommand(arguments.map { .bytes($0) }).encoded, hiredis)
    }
}
