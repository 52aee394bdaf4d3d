import RedisProtocol
import XCTest

/// What sentinels and servers say, and the order the sentinels are asked in.
final class SentinelRepliesTests: XCTestCase {
    func testTheMastersAddressIsTwoBulkStrings() {
        XCTAssertEqual(MasterLookup(.array([.bulk(Array("127.0.0.1".utf8)), .bulk(Array("6380".utf8))])),
                       .master(MasterAddress(host: "127.0.0.1", port: 6380)))
        XCTAssertEqual(MasterLookup.command(masterName: "orders").arguments, ["SENTINEL", "get-master-addr-by-name", "orders"])
    }

    func testANilReplyIsAnUnknownNameAndAnythingElseNoAnswer() {
        XCTAssertEqual(MasterLookup(.null), .unknownName)
        XCTAssertEqual(MasterLookup(.error("ERR unknown command")), .unanswered)
        XCTAssertEqual(MasterLookup(.array([.bulk(Array("h".utf8))])), .unanswered)
        XCTAssertEqual(MasterLookup(.array([.bulk(Array("h".utf8)), .bulk(Array("0".utf8))])), .unanswered)
        XCTAssertEqual(MasterLookup(.array([.bulk([]), .bulk(Array("6379".utf8))])), .unanswered)
        XCTAssertEqual(MasterLookup(.status("OK")), .unanswered)
    }

    func testASwitchMasterMessageNamesTheMasterAndBothAddresses() {
        let change = MasterSwitch(message: Array("orders 127.0.0.1 6379 127.0.0.1 6380".utf8))
        XCTAssertEqual(change, MasterSwitch(masterName: "orders", old: MasterAddress(host: "127.0.0.1", port: 6379),
                                            new: MasterAddress(host: "127.0.0.1", port: 6380)))
        XCTAssertNil(MasterSwitch(message: Array("orders 127.0.0.1 6379 127.0.0.1".utf8)))
        XCTAssertNil(MasterSwitch(message: Array("orders 127.0.0.1 6379 127.0.0.1 x".utf8)))
        XCTAssertNil(MasterSwitch(message: [0xFF, 0x20]))
    }

    func testOnlyAMasterRoleIsWrittenTo() {
        XCTAssertEqual(ServerRole(.array([.bulk(Array("master".utf8)), .integer(12), .array([])])), .master)
        XCTAssertEqual(ServerRole(.array([.bulk(Array("slave".utf8)), .bulk(Array("127.0.0.1".utf8)), .integer(6379)])),
                       .notMaster("slave"))
        XCTAssertEqual(ServerRole(.array([.bulk(Array("sentinel".utf8))])), .notMaster("sentinel"))
        XCTAssertEqual(ServerRole(.error("ERR unknown command 'ROLE'")), .unreadable)
        XCTAssertEqual(ServerRole.command.arguments, ["ROLE"])
    }

    func testAReadOnlyRefusalOrAnUnblockedWaitIsAFailoverSignal() {
        XCTAssertTrue(RedisReply.error("READONLY You can't write against a read only replica.").isDemotionSignal)
        XCTAssertTrue(RedisReply.error("UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)")
            .isDemotionSignal)
        XCTAssertFalse(RedisReply.error("ERR wrong number of arguments").isDemotionSignal)
        XCTAssertFalse(RedisReply.status("READONLY").isDemotionSignal)
        XCTAssertEqual(RedisReply.error("READONLY You can't write").errorCode, "READONLY")
        XCTAssertEqual(RedisReply.status("OK").errorCode, nil)
    }

    func testARoundAsksEachSentinelOnceFromTheLastThatAnswered() {
        var round = SentinelRound(count: 3, first: 1)
        XCTAssertEqual(round.start, .ask(1))
        XCTAssertEqual(round.heard(.unanswered), .ask(2))
        XCTAssertEqual(round.heard(.unknownName), .ask(0))
        XCTAssertEqual(round.heard(.master(MasterAddress(host: "h", port: 1))), .found(MasterAddress(host: "h", port: 1), sentinel: 0))
    }

    func testARoundWithNoAnswerSaysWhy() {
        var round = SentinelRound(count: 2, first: 5)
        XCTAssertEqual(round.start, .ask(1))
        XCTAssertEqual(round.heard(.unknownName), .ask(0))
        XCTAssertEqual(round.heard(.unanswered), .noMaster(unknownName: 1, unanswered: 1))
    }
}
