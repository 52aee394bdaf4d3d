import Endpoints
import OAuth2
import RedisProtocol
import SafeText
import TokenStore
@testable import Tokens
import XCTest

/// The shared store's keys, commands and the parsing of the scripts' answers (no Redis here;
/// RedisClientTests runs the scripts on a real one).
final class SharedEntryCommandsTests: XCTestCase {
    private let fingerprint = SettingsFingerprint(bytes: (0..<32).map { UInt8($0) })

    func testKeysNameThePrefixTheIdentityAndItsSettings() {
        let keys = SharedEntryKeys(prefix: "oauth-relay:", identity: "orders", fingerprint: fingerprint)
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        XCTAssertEqual(String(decoding: keys.entry, as: UTF8.self), "oauth-relay:orders:" + hex)
        XCTAssertEqual(String(decoding: keys.lease, as: UTF8.self), "oauth-relay:orders:" + hex + ":lease")
        XCTAssertEqual(String(decoding: keys.channel, as: UTF8.self), "oauth-relay:written")
        let other = SharedEntryKeys(prefix: "oauth-relay:", identity: "orders", fingerprint: SettingsFingerprint(bytes: [UInt8](repeating: 9, count: 32)))
        XCTAssertNotEqual(other.entry, keys.entry, "other settings, another entry")
    }

    /// In a Redis Cluster the name and fingerprint are the hash tag: entry and lease in one slot,
    /// so each script's keys are on one node; identities spread over the slots.
    func testClusterKeysShareOneHashTagPerIdentity() {
        let keys = SharedEntryKeys(prefix: "oauth-relay:", identity: "orders", fingerprint: fingerprint, hashTagged: true)
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        XCTAssertEqual(String(decoding: keys.entry, as: UTF8.self), "oauth-relay:{orders:" + hex + "}")
        XCTAssertEqual(String(decoding: keys.lease, as: UTF8.self), "oauth-relay:{orders:" + hex + "}:lease")
        XCTAssertEqual(ClusterSlot(key: keys.entry), ClusterSlot(key: keys.lease))
        XCTAssertEqual(ClusterSlot(key: keys.entry), ClusterSlot(key: Array(("orders:" + hex).utf8)))
        XCTAssertEqual(keys.channel, SharedEntryKeys.channel(prefix: "oauth-relay:"))
        let slots = Set(["a", "b", "c", "d", "e", "f"].map {
            ClusterSlot(key: SharedEntryKeys(prefix: "oauth-relay:", identity: $0, fingerprint: fingerprint, hashTagged: true).entry)
        })
        XCTAssertEqual(slots.count, 6)
        let removal = SharedEntryKeys.removal(in: keys.removal(by: "00ff00ff00ff00ff"))
        XCTAssertEqual(removal?.entry, keys.entry)
        XCTAssertNil(SharedEntryKeys.removal(in: keys.entry))
    }

    func testARemovalMessageNamesTheEntryAndTheRemoverAndNothingElseReadsAsOne() throws {
        let keys = SharedEntryKeys(prefix: "oauth-relay:", identity: "a:removed:x", fingerprint: fingerprint)
        let message = keys.removal(by: "00ff00ff00ff00ff")
        let removal = try XCTUnwrap(SharedEntryKeys.removal(in: message))
        XCTAssertEqual(removal.entry, keys.entry)
        XCTAssertEqual(removal.remover, "00ff00ff00ff00ff")
        for other in [keys.entry, keys.lease, Array(":removed:00ff00ff00ff00ff".utf8), keys.entry + Array(":removed:00ff00ff00ff00fz".utf8),
                      keys.entry + Array(":remove:00ff00ff00ff00ff".utf8), []] {
            XCTAssertNil(SharedEntryKeys.removal(in: other), String(decoding: other, as: UTF8.self))
        }
    }

    func testReadAnswers() {
        XCTAssertEqual(SharedEntryRead(.array([.bulk(Array("v1".utf8)), .bulk([1, 2])])), SharedEntryRead(version: "v1", entry: [1, 2]))
        XCTAssertEqual(SharedEntryRead(.array([.null, .null])), SharedEntryRead(version: nil, entry: nil))
        XCTAssertEqual(SharedEntryRead(.array([.bulk(Array("v1".utf8)), .null])), SharedEntryRead(version: nil, entry: nil))
        XCTAssertNil(SharedEntryRead(.array([.null])))
        XCTAssertNil(SharedEntryRead(.integer(1)))
        XCTAssertNil(SharedEntryRead(.array([.integer(1), .bulk([1])])))
    }

    func testLeaseAnswers() {
        XCTAssertEqual(LeaseAnswer(.array([.integer(1), .integer(35_000), .null, .null])),
                       LeaseAnswer(lease: .taken, remainingMilliseconds: 35_000, read: SharedEntryRead(version: nil, entry: nil)))
        XCTAssertEqual(LeaseAnswer(.array([.integer(0), .integer(1200), .bulk(Array("v".utf8)), .bulk([7])])),
                       LeaseAnswer(lease: .heldByAnother, remainingMilliseconds: 1200, read: SharedEntryRead(version: "v", entry: [7])))
        XCTAssertEqual(LeaseAnswer(.array([.integer(1), .integer(10)]))?.read, SharedEntryRead(version: nil, entry: nil),
                       "Redis drops a Lua table's trailing nils")
        XCTAssertEqual(LeaseAnswer(.array([.integer(2), .integer(-2), .bulk(Array("v2".utf8)), .bulk([8])])),
                       LeaseAnswer(lease: .entryChanged, remainingMilliseconds: -2, read: SharedEntryRead(version: "v2", entry: [8])))
        XCTAssertNil(LeaseAnswer(.array([.integer(3), .integer(-2)])))
        XCTAssertNil(LeaseAnswer(.array([.integer(1)])))
        XCTAssertNil(LeaseAnswer(.error("NOSCRIPT")))
    }

    func testWriteAnswers() {
        XCTAssertEqual(WriteAnswer(.array([.integer(1), .bulk(Array("v2".utf8))])), .stored(version: "v2"))
        XCTAssertEqual(WriteAnswer(.array([.integer(0), .bulk(Array("v9".utf8))])), .conflict(current: "v9"))
        XCTAssertEqual(WriteAnswer(.array([.integer(0)])), .conflict(current: nil))
        XCTAssertNil(WriteAnswer(.status("OK")))
    }

    func testAnEntryLivesUntilItsTokenExpiresOrThirtyDaysWithARefreshToken() {
        let access = StoredToken.Access(value: Secret("at"), type: "Bearer", issuedAt: 1000, expiresAt: 1300, scope: nil)
        XCTAssertEqual(SharedEntryCommands.ttlMilliseconds(StoredToken(access: access, refreshToken: nil), now: 1100), 200_000)
        XCTAssertEqual(SharedEntryCommands.ttlMilliseconds(StoredToken(access: access, refreshToken: Secret("rt")), now: 1100),
                       30 * 24 * 3600 * 1000)
        XCTAssertEqual(SharedEntryCommands.ttlMilliseconds(StoredToken(access: access, refreshToken: nil), now: 5000), 1000,
                       "an expired token's entry still lives a second")
    }

    func testCommandsShowNoArgumentInTheirDescription() {
        let keys = SharedEntryKeys(prefix: "p:", identity: "orders", fingerprint: fingerprint)
        let write = SharedEntryCommands.write(keys, expected: .absent, version: "v1", entry: Array("sealed".utf8), ttlMilliseconds: 10, holder: "h")
        XCTAssertEqual(write.description, "EVAL (10 arguments)")
        XCTAssertEqual(SharedEntryCommands.read(keys).description, "HMGET (3 arguments)")
    }

    func testTheReplicaWaitIsHalfTheTimeoutAndAHundredMillisecondsAtMost() {
        XCTAssertEqual(SharedEntryCommands.waitForReplica(timeoutMilliseconds: 60).arguments, ["WAIT", "1", .integer(30)])
        XCTAssertEqual(SharedEntryCommands.waitForReplica(timeoutMilliseconds: 200).arguments, ["WAIT", "1", .integer(100)])
        XCTAssertEqual(SharedEntryCommands.waitForReplica(timeoutMilliseconds: 2000).arguments, ["WAIT", "1", .integer(100)])
        XCTAssertEqual(SharedEntryCommands.waitForReplica(timeoutMilliseconds: 1).arguments, ["WAIT", "1", .integer(1)])
    }
}
