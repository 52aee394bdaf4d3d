import RedisProtocol
import SafeText
import XCTest

/// Redis Cluster as values: seed URLs, key slots, slot maps and redirections.
final class RedisClusterSeedsTests: XCTestCase {
    func testSeedsShareTheCredentialsAndDefaultToPort6379() throws {
        let seeds = try RedisClusterSeeds(parsing: "REDIS-CLUSTER://relay:p%40ss@Node-A:7000,[::1]:7001,node-c/0")
        XCTAssertEqual(seeds.seeds, [
            RedisEndpoint(host: "node-a", port: 7000, user: "relay", password: Secret("p@ss")),
            RedisEndpoint(host: "::1", port: 7001, user: "relay", password: Secret("p@ss")),
            RedisEndpoint(host: "node-c", port: 6379, user: "relay", password: Secret("p@ss")),
        ])
        XCTAssertEqual(seeds.node(host: "10.0.0.9", port: 7005), RedisEndpoint(host: "10.0.0.9", port: 7005, user: "relay", password: Secret("p@ss")))
    }

    func testTheDescriptionHidesThePassword() throws {
        let seeds = try RedisClusterSeeds(parsing: "redis-cluster://:very-secret@a:7000,b:7001")
        XCTAssertEqual(seeds.description, "redis-cluster://:…@a:7000,b:7001")
        XCTAssertEqual(try RedisTopology(parsing: "redis-cluster://a:7000").description, "redis-cluster://a:7000")
    }

    func testTheTopologyFollowsTheScheme() throws {
        XCTAssertEqual(try RedisTopology(parsing: "redis://r:7000"), .server(RedisEndpoint(host: "r", port: 7000)))
        XCTAssertTrue(try RedisTopology(parsing: "redis-cluster://r:7000").isCluster)
        XCTAssertFalse(try RedisTopology(parsing: "redis://r:7000").isCluster)
    }
}

final class ClusterSlotTests: XCTestCase {
    /// The cluster specification's check value: CRC16/XMODEM of "123456789" is 0x31C3.
    func testCRC16IsXMODEM() {
        XCTAssertEqual(ClusterSlot(key: Array("123456789".utf8)).number, 0x31C3 & 0x3FFF)
    }

    /// Slots `CLUSTER KEYSLOT` gives (Redis 7.0.15).
    func testKnownSlots() {
        XCTAssertEqual(ClusterSlot(key: Array("foo".utf8)).number, 12182)
        XCTAssertEqual(ClusterSlot(key: Array("bar".utf8)).number, 5061)
        XCTAssertEqual(ClusterSlot(key: Array("hello".utf8)).number, 866)
    }

    /// The specification's hash tag examples.
    func testTheHashTagIsBetweenTheFirstBraceAndTheFirstClosingOneAfterIt() {
        func slot(_ key: String) -> Int { ClusterSlot(key: Array(key.utf8)).number }
        XCTAssertEqual(slot("{user1000}.following"), slot("{user1000}.followers"))
        XCTAssertEqual(slot("{user1000}.following"), slot("user1000"))
        XCTAssertEqual(slot("foo{}{bar}"), slot("foo{}{bar}"))
        XCTAssertNotEqual(slot("foo{}{bar}"), slot("bar"), "an empty tag: the whole key is hashed")
        XCTAssertEqual(slot("foo{{bar}}zap"), slot("{bar"))
        XCTAssertEqual(slot("foo{bar}{zap}"), slot("bar"))
        XCTAssertEqual(slot("{foo"), slot("{foo"))
        XCTAssertNotEqual(slot("{foo"), slot("foo"), "no closing brace: the whole key is hashed")
    }

    func testOnlySlotsBelow16384Exist() {
        XCTAssertNotNil(ClusterSlot(16383))
        XCTAssertNil(ClusterSlot(16384))
        XCTAssertNil(ClusterSlot(-1))
    }
}

final class ClusterRedirectionTests: XCTestCase {
    func testMovedAndAskNameTheSlotAndNode() {
        XCTAssertEqual(ClusterRedirection(.error("MOVED 3999 127.0.0.1:6381"), askedHost: "x"),
                       .moved(ClusterSlot(3999)!, ClusterNode(host: "127.0.0.1", port: 6381)))
        XCTAssertEqual(ClusterRedirection(.error("ASK 3999 Node-B:6381"), askedHost: "x"),
                       .ask(ClusterSlot(3999)!, ClusterNode(host: "node-b", port: 6381)))
        XCTAssertEqual(ClusterRedirection(.error("MOVED 1 ::1:7000"), askedHost: "x"), .moved(ClusterSlot(1)!, ClusterNode(host: "::1", port: 7000)))
        XCTAssertEqual(ClusterRedirection(.error("TRYAGAIN Multiple keys request during rehashing of slot"), askedHost: "x"), .tryAgain)
    }

    /// Redis 7 writes `:port` when a node does not know its own address: the node asked is meant.
    func testAnEmptyHostIsTheNodeAsked() {
        XCTAssertEqual(ClusterRedirection(.error("MOVED 5 :7002"), askedHost: "10.0.0.1"),
                       .moved(ClusterSlot(5)!, ClusterNode(host: "10.0.0.1", port: 7002)))
    }

    func testOtherRepliesAreNoRedirection() {
        for reply: RedisReply in [.status("OK"), .error("ERR unknown command"), .error("MOVED 16384 a:1"), .error("MOVED x a:1"),
                                  .error("ASK 1 a:0"), .error("ASK 1 a"), .error("MOVED 1"), .bulk(Array("MOVED 1 a:1".utf8))] {
            XCTAssertNil(ClusterRedirection(reply, askedHost: "x"), "\(reply)")
        }
    }

    /// A node names hosts the relay then resolves: one that is no host name or address (or longer
    /// than a resolver takes) is no redirection.
    func testARedirectionToAnInvalidHostIsNone() {
        let long = String(repeating: "a", count: 300)
        for text in ["MOVED 1 \(long):7000", "ASK 1 \(long):7000", "MOVED 1 bad/host:7000", "MOVED 1 a%b:7000", "MOVED 1 é.example:7000"] {
            XCTAssertNil(ClusterRedirection(.error(text), askedHost: "x"), text)
        }
        XCTAssertEqual(ClusterRedirection(.error("MOVED 1 node_7.example:7000"), askedHost: "x"),
                       .moved(ClusterSlot(1)!, ClusterNode(host: "node_7.example", port: 7000)))
    }
}

final class ClusterSlotMapTests: XCTestCase {
    private func range(_ first: Int64, _ last: Int64, _ host: String, _ port: Int64) -> RedisReply {
        .array([.integer(first), .integer(last), .array([.bulk(Array(host.utf8)), .integer(port), .bulk(Array("id".utf8))]),
                .array([.bulk(Array("10.9.9.9".utf8)), .integer(9999), .bulk(Array("replica".utf8))])])
    }

    func testTheMapFromClusterSlotsNamesEachSlotsMaster() throws {
        let map = try XCTUnwrap(ClusterSlotMap(slotsReply: .array([range(0, 5460, "127.0.0.1", 7000), range(5461, 10922, "127.0.0.1", 7001),
                                                                   range(10923, 16383, "", 7002)]), askedHost: "127.0.0.9"))
        XCTAssertEqual(map.node(for: ClusterSlot(0)!), ClusterNode(host: "127.0.0.1", port: 7000))
        XCTAssertEqual(map.node(for: ClusterSlot(5461)!), ClusterNode(host: "127.0.0.1", port: 7001))
        XCTAssertEqual(map.node(for: ClusterSlot(16383)!), ClusterNode(host: "127.0.0.9", port: 7002), "an empty host is the node asked")
        XCTAssertEqual(map.masters.count, 3, "replicas are not masters")
        XCTAssertEqual(map.slotCount(of: ClusterNode(host: "127.0.0.1", port: 7000)), 5461)
    }

    /// `cluster-preferred-endpoint-type unknown-endpoint` writes a NULL endpoint: the node asked.
    func testANullEndpointIsTheNodeAsked() throws {
        let unknown: RedisReply = .array([.integer(0), .integer(16383), .array([.null, .integer(7000), .bulk(Array("id".utf8))])])
        let map = try XCTUnwrap(ClusterSlotMap(slotsReply: .array([unknown]), askedHost: "127.0.0.9"))
        XCTAssertEqual(map.node(for: ClusterSlot(16383)!), ClusterNode(host: "127.0.0.9", port: 7000))
    }

    func testMovedReassignsOneSlot() throws {
        var map = try XCTUnwrap(ClusterSlotMap(slotsReply: .array([range(0, 16383, "a", 7000)]), askedHost: "x"))
        map.assign(ClusterSlot(42)!, to: ClusterNode(host: "b", port: 7001))
        XCTAssertEqual(map.node(for: ClusterSlot(42)!), ClusterNode(host: "b", port: 7001))
        XCTAssertEqual(map.node(for: ClusterSlot(43)!), ClusterNode(host: "a", port: 7000))
        XCTAssertEqual(map.slotCount(of: ClusterNode(host: "a", port: 7000)), 16383)
    }

    func testASlotNoMasterServesHasNoNode() throws {
        let map = try XCTUnwrap(ClusterSlotMap(slotsReply: .array([range(0, 99, "a", 7000)]), askedHost: "x"))
        XCTAssertNil(map.node(for: ClusterSlot(100)!))
    }

    func testOtherRepliesAreNoMap() {
        for reply: RedisReply in [.error("ERR This instance has cluster support disabled"), .array([]),
                                  .array([range(10, 5, "a", 7000)]), .array([range(0, 16384, "a", 7000)]),
                                  .array([range(0, 1, "a", 0)]), .array([.array([.integer(0), .integer(1)])])] {
            XCTAssertNil(ClusterSlotMap(slotsReply: reply, askedHost: "x"), "\(reply)")
        }
    }

    /// A slot's owner is counted in 16 bits: a reply naming more masters than there are slots
    /// (each range may repeat slot 0) is refused, and so is a MOVED to one more.
    func testMoreMastersThanSlotsAreRefused() throws {
        let ranges = (0..<ClusterSlot.count).map { range(0, 0, "10.0.\($0 / 256).\($0 % 256)", 7000) }
        var map = try XCTUnwrap(ClusterSlotMap(slotsReply: .array(ranges), askedHost: "x"))
        XCTAssertEqual(map.masters.count, ClusterSlot.count)
        XCTAssertFalse(map.assign(ClusterSlot(1)!, to: ClusterNode(host: "10.1.0.0", port: 7000)))
        XCTAssertNil(map.node(for: ClusterSlot(1)!))
        XCTAssertTrue(map.assign(ClusterSlot(1)!, to: ClusterNode(host: "10.0.0.9", port: 7000)), "a known master still takes slots")
        XCTAssertNil(ClusterSlotMap(slotsReply: .array(ranges + [range(0, 0, "10.1.0.0", 7000)]), askedHost: "x"))
        // 65,536 masters overflowed the 16-bit owner before the bound.
        let hostile = (0..<65_536).map { range(0, 0, "10.\($0 / 65_536).\($0 / 256 % 256).\($0 % 256)", 7000) }
        XCTAssertNil(ClusterSlotMap(slotsReply: .array(hostile), askedHost: "x"))
    }

    func testAMapNamingAnInvalidHostIsNone() {
        for host in [String(repeating: "a", count: 300), "bad/host", "a%b", "a..b"] {
            XCTAssertNil(ClusterSlotMap(slotsReply: .array([range(0, 99, "a", 7000), range(100, 16383, host, 7001)]), askedHost: "x"), host)
        }
    }
}

final class ClusterRoutingTests: XCTestCase {
    func testTheFirstKeyRoutes() {
        XCTAssertEqual(ClusterRouting.key(of: RedisCommand(["HMGET", .bytes([1, 2]), "v", "e"])), [1, 2])
        XCTAssertEqual(ClusterRouting.key(of: RedisCommand(["EVAL", "return 1", "2", .bytes([7]), .bytes([8]), "a"])), [7])
        XCTAssertEqual(ClusterRouting.key(of: RedisCommand(["eval", "return 1", "1", .text("k")])), Array("k".utf8))
    }

    func testCommandsWithoutKeysGoAnywhere() {
        XCTAssertNil(ClusterRouting.key(of: RedisCommand(["PING"])))
        XCTAssertNil(ClusterRouting.key(of: RedisCommand(["CLUSTER", "SLOTS"])))
        XCTAssertNil(ClusterRouting.key(of: RedisCommand(["EVAL", "return 1", "0", "a"])))
        XCTAssertNil(ClusterRouting.slot(of: RedisCommand(["ASKING"])))
    }
}
