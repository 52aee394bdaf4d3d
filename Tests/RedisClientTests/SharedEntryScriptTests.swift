import EventLoop
import RedisClient
import RedisProtocol
import TokenStore
@testable import Tokens
import LoopTestSupport
import XCTest

/// The shared store's commands and Lua scripts (Tokens/SharedEntryCommands.swift) on a real
/// Redis: the lease is one holder's at a time, the write is a compare-and-set on the version read,
/// and the channel hears of every write and release.
final class SharedEntryScriptTests: XCTestCase {
    private var test: LeakCheckedLoop!
    private var server: RedisServer!
    private var connection: RedisConnection!
    private var heard: [[UInt8]] = []
    private var listener: RedisConnection!
    private let keys = SharedEntryKeys(prefix: "test:", identity: "orders", fingerprint: SettingsFingerprint(bytes: [UInt8](repeating: 5, count: 32)))

    override func setUpWithError() throws {
        test = try LeakCheckedLoop()
        server = try RedisServer()
        let endpoint = RedisEndpoint(host: "127.0.0.1", port: server.port)
        var ready = 0
        connection = RedisConnection(loop: test.loop, endpoint: endpoint, timeoutMilliseconds: 2000,
                                     onReady: { ready += 1 }, onEnded: { XCTFail("ended: \($0)") })
        listener = RedisConnection(loop: test.loop, endpoint: endpoint, timeoutMilliseconds: 2000, subscribingTo: keys.channel,
                                   onMessage: { [unowned self] in heard.append($0) }, onReady: { ready += 1 }, onEnded: { XCTFail("ended: \($0)") })
        test.run(until: "both connections are up") { ready == 2 }
    }

    override func tearDown() {
        // Whatever setUp made before it failed (no redis-server: no connections).
        connection?.close()
        listener?.close()
        test?.closeAndCheckForLeaks()
        server?.stop()
    }

    private func run(_ command: RedisCommand) throws -> RedisReply {
        var result: Result<RedisReply, RedisConnection.Failure>?
        XCTAssertTrue(connection.send(command) { result = $0 })
        test.run(until: "the reply to \(command)") { result != nil }
        return try XCTUnwrap(result).get()
    }

    private func acquire(_ holder: String, lease: Int64 = 30_000, ifUnchanged: EntryVersion? = nil) throws -> LeaseAnswer {
        try XCTUnwrap(LeaseAnswer(run(SharedEntryCommands.acquire(keys, holder: holder, leaseMilliseconds: lease, ifUnchanged: ifUnchanged))))
    }

    private func write(_ holder: String, expected: EntryVersion, version: String, entry: String) throws -> WriteAnswer {
        try XCTUnwrap(WriteAnswer(run(SharedEntryCommands.write(keys, expected: expected, version: version, entry: Array(entry.utf8),
                                                                 ttlMilliseconds: 60_000, holder: holder))))
    }

    /// Every message the channel carried for the commands run so far: a marker published now comes
    /// after them (Redis delivers a channel's messages in order), so once it arrives nothing
    /// published before it is still on its way, an unexpected extra message included.
    private func messagesSoFar() throws -> [[UInt8]] {
        let marker = Array("marker".utf8)
        _ = try run(RedisCommand(["PUBLISH", .bytes(keys.channel), .bytes(marker)]))
        test.run(until: "the marker arrives") { heard.last == marker }
        return Array(heard.dropLast())
    }

    func testTheLeaseIsOneHoldersAtATime() throws {
        let first = try acquire("a")
        XCTAssertTrue(first.took)
        XCTAssertGreaterThan(first.remainingMilliseconds, 29_000)
        XCTAssertEqual(first.read, SharedEntryRead(version: nil, entry: nil))
        let second = try acquire("b")
        XCTAssertFalse(second.took)
        XCTAssertGreaterThan(second.remainingMilliseconds, 28_000, "the waiter learns when the lease ends")
        XCTAssertTrue(try acquire("a", lease: 50_000).took, "the holder renews its own lease")
        XCTAssertGreaterThan(try acquire("b").remainingMilliseconds, 49_000)
    }

    func testTheLeaseIsAskedForOnlyIfTheEntryIsStillTheVersionSeen() throws {
        XCTAssertEqual(try acquire("a", ifUnchanged: .known("v1")).lease, .entryChanged, "no entry is not v1")
        XCTAssertEqual(try acquire("a", ifUnchanged: .absent).lease, .taken, "no entry, as seen")
        XCTAssertEqual(try write("a", expected: .absent, version: "v1", entry: "first"), .stored(version: "v1"))
        let changed = try acquire("b", ifUnchanged: .absent)
        XCTAssertEqual(changed.lease, .entryChanged)
        XCTAssertEqual(changed.read, SharedEntryRead(version: "v1", entry: Array("first".utf8)), "the new entry comes back")
        XCTAssertEqual(try acquire("b", ifUnchanged: .known("v1")).lease, .taken)
        XCTAssertEqual(try acquire("a", ifUnchanged: .known("v1")).lease, .heldByAnother)
        let other = try acquire("c", ifUnchanged: .known("v0"))
        XCTAssertEqual(other.lease, .entryChanged)
        XCTAssertGreaterThan(other.remainingMilliseconds, 28_000, "b's lease stays, untouched")
    }

    func testAnExpiredLeaseIsTakenOver() throws {
        XCTAssertTrue(try acquire("a", lease: 30).took)
        usleep(60_000)  // the lease's own expiry, at the server
        XCTAssertTrue(try acquire("b").took)
    }

    func testTheWriteIsACompareAndSetOnTheVersionRead() throws {
        XCTAssertTrue(try acquire("a").took)
        XCTAssertEqual(try write("a", expected: .absent, version: "v1", entry: "first"), .stored(version: "v1"))
        // A holder that read before v1 was written (its lease expired meanwhile) is refused.
        XCTAssertEqual(try write("b", expected: .absent, version: "v0", entry: "older"), .conflict(current: "v1"))
        XCTAssertEqual(try write("b", expected: .known("v9"), version: "v0", entry: "older"), .conflict(current: "v1"))
        XCTAssertEqual(SharedEntryRead(try run(SharedEntryCommands.read(keys))), SharedEntryRead(version: "v1", entry: Array("first".utf8)))
        XCTAssertEqual(try write("b", expected: .known("v1"), version: "v2", entry: "second"), .stored(version: "v2"))
        let lease = try acquire("c")
        XCTAssertEqual(lease.read, SharedEntryRead(version: "v2", entry: Array("second".utf8)), "the acquire reads the entry too")
    }

    func testAWriteEndsTheWritersLeaseOnlyAndIsPublished() throws {
        XCTAssertTrue(try acquire("a").took)
        _ = try write("b", expected: .absent, version: "v1", entry: "x")
        XCTAssertFalse(try acquire("b").took, "b's write left a's lease alone")
        _ = try write("a", expected: .known("v1"), version: "v2", entry: "y")
        XCTAssertTrue(try acquire("b").took, "a's write released a's lease")
        XCTAssertEqual(try messagesSoFar(), [keys.entry, keys.entry])
    }

    func testTheEntryExpiresWithItsTTL() throws {
        _ = try write("a", expected: .absent, version: "v1", entry: "x")
        guard case .integer(let ttl) = try run(RedisCommand(["PTTL", .bytes(keys.entry)])) else { return XCTFail("no TTL") }
        XCTAssertGreaterThan(ttl, 59_000)
        XCTAssertLessThanOrEqual(ttl, 60_000)
    }

    func testAReleaseFreesOnlyTheHoldersLeaseAndTellsTheWaiters() throws {
        XCTAssertTrue(try acquire("a").took)
        XCTAssertEqual(try run(SharedEntryCommands.release(keys, holder: "b")), .integer(0))
        XCTAssertEqual(try run(SharedEntryCommands.release(keys, holder: "a")), .integer(1))
        XCTAssertEqual(try messagesSoFar(), [keys.entry], "only the holder's release is told")
        XCTAssertTrue(try acquire("b").took)
    }

    func testRemoveDeletesTheEntry() throws {
        _ = try write("a", expected: .absent, version: "v1", entry: "x")
        XCTAssertEqual(try run(SharedEntryCommands.remove(keys, by: "00000000000000aa")), .integer(1))
        XCTAssertEqual(SharedEntryRead(try run(SharedEntryCommands.read(keys))), SharedEntryRead(version: nil, entry: nil))
    }

    /// A per-caller identity's callers' generation: set once by whoever reads it first, kept, and
    /// deleted by a logout with the identity's entry (the next read sets a new one).
    func testTheCallersGenerationIsSetOnceAndALogoutDeletesIt() throws {
        XCTAssertEqual(try run(CallerGenerationCommands.read(keys, fresh: "g1")), .bulk(Array("g1".utf8)))
        XCTAssertEqual(try run(CallerGenerationCommands.read(keys, fresh: "g2")), .bulk(Array("g1".utf8)), "the first one stays")
        XCTAssertEqual(try run(SharedEntryCommands.remove(keys, by: "00000000000000aa")), .integer(0), "no entry of its own")
        XCTAssertEqual(try run(CallerGenerationCommands.read(keys, fresh: "g3")), .bulk(Array("g3".utf8)))
        XCTAssertEqual(try messagesSoFar().count, 1, "the removal's message, nothing for a generation")
    }

    func testARemovalTellsEveryReplicaWhichEntryWentAndWhoRemovedIt() throws {
        _ = try write("a", expected: .absent, version: "v1", entry: "x")
        XCTAssertEqual(try run(SharedEntryCommands.remove(keys, by: "0123456789abcdef")), .integer(1))
        XCTAssertEqual(try run(SharedEntryCommands.remove(keys, by: "0123456789abcdef")), .integer(0), "gone already")
        let messages = try messagesSoFar()
        XCTAssertEqual(messages.count, 3, "the write and both removals, nothing else")
        guard messages.count == 3 else { return }
        XCTAssertEqual(messages[0], keys.entry, "a write's message is the key")
        XCTAssertNil(SharedEntryKeys.removal(in: messages[0]), "a write is no removal")
        let removal = try XCTUnwrap(SharedEntryKeys.removal(in: messages[1]))
        XCTAssertEqual(removal.entry, keys.entry)
        XCTAssertEqual(removal.remover, "0123456789abcdef")
        XCTAssertEqual(messages[2], messages[1], "a removal of a missing entry is told too")
    }
}
