import OAuth2
import RedisProtocol
import SafeText
import XCTest

/// Commands in RESP, and descriptions that never show an argument.
final class RedisCommandTests: XCTestCase {
    func testACommandIsAnArrayOfBulkStrings() {
        let command = RedisCommand(["SET", "k", .integer(-42), .bytes([0, 13, 10, 255])])
        XCTAssertEqual(command.encoded, Array("*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\n-42\r\n$4\r\n".utf8) + [0, 13, 10, 255] + [13, 10])
    }

    func testAnEmptyArgumentIsAnEmptyBulkString() {
        XCTAssertEqual(RedisCommand(["ECHO", ""]).encoded, Array("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n".utf8))
    }

    func testLengthsCountBytesNotCharacters() {
        XCTAssertEqual(RedisCommand(["ECHO", .text("é")]).encoded, Array("*2\r\n$4\r\nECHO\r\n$2\r\né\r\n".utf8))
    }

    func testASecretGoesOnTheWireButNotIntoTheDescription() {
        let command = RedisCommand(["AUTH", "relay", .secret(Secret("a-long-redis-password"))])
        XCTAssertTrue(String(decoding: command.encoded, as: UTF8.self).contains("a-long-redis-password"))
        XCTAssertEqual(command.description, "AUTH (2 arguments)")
        XCTAssertFalse(String(reflecting: command).contains("password"))
        var dumped = ""
        dump(command, to: &dumped)
        XCTAssertFalse(dumped.contains("a-long-redis-password"))
    }

    func testTheNameIsUpperCased() {
        XCTAssertEqual(RedisCommand(["eval", "return 1", "0"]).name, "EVAL")
    }

    func testReplyDescriptionsShowNoBulkContent() {
        let reply = RedisReply.array([.bulk(Array("an-encrypted-entry".utf8)), .null, .integer(3), .status("OK"), .error("ERR no")])
        XCTAssertEqual(reply.description, "[$18 bytes, nil, :3, +OK, -ERR no]")
    }

    func testReplyAccessors() {
        XCTAssertEqual(RedisReply.bulk(Array("v1".utf8)).text, "v1")
        XCTAssertEqual(RedisReply.status("PONG").text, "PONG")
        XCTAssertNil(RedisReply.integer(1).text)
        XCTAssertEqual(RedisReply.integer(7).integer, 7)
        XCTAssertNil(RedisReply.null.elements)
        XCTAssertNil(RedisReply.bulk([0xff]).text)
    }
}
