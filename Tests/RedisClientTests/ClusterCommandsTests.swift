import EventLoop
import Foundation
import LoopTestSupport
import RedisClient
import RedisProtocol
@testable import Tokens
import XCTest

/// Three redis-server masters joined by `redis-cli --cluster create`, nothing saved.
private final class TestCluster {
    let nodes: [RedisServer]

    init() throws {
        // A cluster that has not agreed within 20 s is made again, up to three times: once in
        // about 25 runs here a fresh cluster stayed split (nodes not ok) for a minute and more.
        var attempt = 1
        while true {
            let nodes = try Self.startNodes()
            _ = try Self.run(["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + ["--cluster-replicas", "0", "--cluster-yes"])
            let problem = try Self.waitAgreed(nodes, seconds: 20)
            if problem == nil || attempt == 3 {
                self.nodes = nodes
                if let problem { XCTFail("the cluster did not agree, three times: \(problem)") }
                return
            }
            for node in nodes { node.stop() }
            attempt += 1
        }
    }

    private static func startNodes() throws -> [RedisServer] {
        var nodes: [RedisServer] = []
        while nodes.count < 3 {
            // A node's bus listens on its port + 10000: a port above 55535 cannot start; take another.
            for attempt in 1...10 {
                do {
                    nodes.append(try RedisServer(extraArguments: ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]))
                    break
                } catch where attempt < 10 {
                    continue
                }
            }
        }
        return nodes
    }

    func stop() {
        for node in nodes { node.stop() }
    }

    /// `redis-cli` (on `node`, if given) with `arguments`; its output, trimmed.
    @discardableResult
    static func run(_ arguments: [String], on node: RedisServer? = nil) throws -> String {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = (node.map { ["-h", "127.0.0.1", "-p", String($0.port)] } ?? []) + arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func cli(_ node: RedisServer, _ arguments: String...) throws -> String {
        try Self.run(arguments, on: node)
    }

    /// Every node says cluster_state:ok and names the same masters' slots, within `seconds`: nil
    /// when they do, else what was still wrong.
    static func waitAgreed(_ nodes: [RedisServer], seconds: TimeInterval) throws -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        var problem = ""
        while Date() < deadline {
            let states = try nodes.map { try run(["CLUSTER", "INFO"], on: $0) }
            let maps = try Set(nodes.map { node in
                try run(["CLUSTER", "NODES"], on: node).split(whereSeparator: \.isNewline).filter { $0.contains("master") }
                    .map { line in line.split(separator: " ").enumerated().filter { $0.offset == 1 || $0.offset >= 8 }.map(\.element).joined(separator: " ") }
                    .sorted()
            })
            let notOK = zip(nodes, states).filter { !$0.1.contains("cluster_state:ok") }.map(\.0.port)
            if notOK.isEmpty && maps.count == 1 { return nil }
            problem = "nodes not ok: \(notOK), \(maps.count) different slot maps after \(Int(seconds)) s"
            usleep(50_000)
        }
        return problem
    }

    /// Every node agrees again (after a slot moved), or the test fails.
    func waitAgreed() throws {
        if let problem = try Self.waitAgreed(nodes, seconds: 20) { XCTFail("the cluster did not agree: \(problem)") }
    }

    func id(_ node: RedisServer) throws -> String { try cli(node, "CLUSTER", "MYID") }

    /// The node holding `key` (which exists): the only one with keys in its slot.
    func owner(of key: String) throws -> RedisServer {
        let slot = try cli(nodes[0], "CLUSTER", "KEYSLOT", key)
        return try XCTUnwrap(nodes.first { try cli($0, "CLUSTER", "COUNTKEYSINSLOT", slot) != "0" }, "no node holds \(key)")
    }

    func stat(_ node: RedisServer, _ section: String, _ name: String) throws -> Int {
        // INFO ends its lines in CRLF, one Character in Swift.
        let line = try cli(node, "INFO", section).split(whereSeparator: \.isNewline).first { $0.hasPrefix(name + ":") }
        guard let line, let value = line.split(separator: ",").first?.split(separator: "=").last else { return 0 }
        return Int(value.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }
}

/// ClusterCommands on a real three-master cluster: each command at its slot's master, MOVED and
/// ASK followed, TRYAGAIN retried, and nothing left open.
final class ClusterCommandsTests: XCTestCase {
    private var cluster: TestCluster!

    override func setUpWithError() throws {
        cluster = try TestCluster()
    }

    override func tearDown() {
        cluster?.stop()
    }

    private func send(_ commands: ClusterCommands, _ test: LeakCheckedLoop, _ arguments: [RedisArgument],
                      file: StaticString = #filePath, line: UInt = #line) -> RedisReply? {
        var answer: Result<RedisReply, RedisConnection.Failure>?
        XCTAssertTrue(commands.send(RedisCommand(arguments)) { answer = $0 }, file: file, line: line)
        test.run(until: "an answer", file: file, line: line) { answer != nil }
        guard case .success(let reply) = answer else {
            XCTFail("\(String(describing: answer))", file: file, line: line)
            return nil
        }
        return reply
    }

    private func open(_ test: LeakCheckedLoop, seeds: [RedisServer]) -> ClusterCommands {
        var ended: RedisConnection.Failure?
        var ready = false
        let commands = ClusterCommands(loop: test.loop, seeds: RedisClusterSeeds(seeds: seeds.map { RedisEndpoint(host: "127.0.0.1", port: $0.port) }),
                                       timeoutMilliseconds: 2000, onReady: { ready = true }, onEnded: { ended = $0 })
        test.run(until: "the slot map is in") { ready || ended != nil }
        XCTAssertNil(ended)
        return commands
    }

    func testEachCommandGoesToItsSlotsMasterAndScriptsOfOneTagRun() throws {
        let test = try LeakCheckedLoop()
        let commands = open(test, seeds: [cluster.nodes[1]])
        // Keys on every master (foo 12182, bar 5061, hello 866: three thirds of the slots).
        for key in ["foo", "bar", "hello"] {
            XCTAssertEqual(send(commands, test, ["SET", .text(key), .text("v-" + key)]), .status("OK"))
        }
        for key in ["foo", "bar", "hello"] {
            XCTAssertEqual(try cluster.cli(try cluster.owner(of: key), "GET", key), "v-" + key)
        }
        XCTAssertEqual(try cluster.nodes.map { try cluster.stat($0, "errorstats", "errorstat_MOVED") }, [0, 0, 0], "a command went to another node")
        let script = "redis.call('SET', KEYS[2], ARGV[1]); return redis.call('GET', KEYS[1])"
        XCTAssertEqual(send(commands, test, ["EVAL", .text(script), "2", "{orders}:e", "{orders}:lease", "h"]), .null)
        commands.close()
        test.closeAndCheckForLeaks()
    }

    func testASlotMovedIsFollowedWhileItMigratesAndOnceItHas() throws {
        let test = try LeakCheckedLoop()
        let commands = open(test, seeds: cluster.nodes)
        XCTAssertEqual(send(commands, test, ["SET", "{moving}:e", "entry"]), .status("OK"))
        let source = try cluster.owner(of: "{moving}:e")
        let target = try XCTUnwrap(cluster.nodes.first { $0 !== source })
        let slot = try cluster.cli(source, "CLUSTER", "KEYSLOT", "{moving}")
        XCTAssertEqual(try cluster.cli(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", cluster.id(source)), "OK")
        XCTAssertEqual(try cluster.cli(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", cluster.id(target)), "OK")
        XCTAssertEqual(try cluster.cli(source, "MIGRATE", "127.0.0.1", String(target.port), "{moving}:e", "0", "5000"), "OK")

        // Migrating: the source answers ASK, the target serves it after ASKING.
        XCTAssertEqual(send(commands, test, ["GET", "{moving}:e"]), .bulk(Array("entry".utf8)))
        XCTAssertEqual(try cluster.stat(target, "commandstats", "cmdstat_asking"), 1)
        // A script naming the entry (there) and the lease (not yet): TRYAGAIN until the move ends.
        let script = "redis.call('SET', KEYS[2], ARGV[1], 'PX', 60000); return redis.call('GET', KEYS[1])"
        var answer: Result<RedisReply, RedisConnection.Failure>?
        XCTAssertTrue(commands.send(RedisCommand(["EVAL", .text(script), "2", "{moving}:e", "{moving}:lease", "h"])) { answer = $0 })
        test.run(forMilliseconds: 300)
        XCTAssertNil(answer, "TRYAGAIN was the answer, not a reason to ask again")
        for node in [target] + cluster.nodes.filter({ $0 !== target }) {
            XCTAssertEqual(try cluster.cli(node, "CLUSTER", "SETSLOT", slot, "NODE", cluster.id(target)), "OK")
        }
        test.run(until: "the script ran once the slot moved") { answer != nil }
        XCTAssertEqual(try answer?.get(), .bulk(Array("entry".utf8)))
        try cluster.waitAgreed()

        // Moved: the source answers MOVED once; the map then names the target.
        let movedBefore = try cluster.stat(source, "errorstats", "errorstat_MOVED")
        XCTAssertEqual(send(commands, test, ["GET", "{moving}:lease"]), .bulk(Array("h".utf8)))
        XCTAssertEqual(send(commands, test, ["GET", "{moving}:e"]), .bulk(Array("entry".utf8)))
        XCTAssertLessThanOrEqual(try cluster.stat(source, "errorstats", "errorstat_MOVED") - movedBefore, 1)
        commands.close()
        test.closeAndCheckForLeaks()
    }

    /// A server (or a load balancer) dropping an idle connection to a master that is not the map's
    /// source: forgotten, and the next command for it connects again; the link goes on.
    func testAnIdleMastersConnectionEndingIsForgottenNotTheLinksEnd() throws {
        let test = try LeakCheckedLoop()
        var ended: RedisConnection.Failure?
        var ready = false
        let seed = cluster.nodes[0]
        let commands = ClusterCommands(loop: test.loop, seeds: RedisClusterSeeds(seeds: [RedisEndpoint(host: "127.0.0.1", port: seed.port)]),
                                       timeoutMilliseconds: 2000, onReady: { ready = true }, onEnded: { ended = $0 })
        test.run(until: "the slot map is in") { ready || ended != nil }
        // Keys on every master (b 3300, c 7365, foo 12182: one in each third of the slots).
        for key in ["b", "c", "foo"] {
            XCTAssertEqual(send(commands, test, ["SET", .text(key), "v"]), .status("OK"))
        }
        XCTAssertEqual(commands.connectedNodes, 3)
        let key = try XCTUnwrap(["b", "c", "foo"].first { try cluster.owner(of: $0) !== seed })
        XCTAssertEqual(try cluster.cli(try cluster.owner(of: key), "CLIENT", "KILL", "TYPE", "normal"), "1")
        test.run(until: "the connection's end was seen") { ended != nil || commands.connectedNodes == 2 }
        XCTAssertNil(ended)
        XCTAssertTrue(commands.isReady)
        XCTAssertEqual(send(commands, test, ["GET", .text(key)]), .bulk(Array("v".utf8)))
        XCTAssertEqual(commands.connectedNodes, 3)
        // The map source's connection is the link's: its end ends the whole.
        XCTAssertEqual(try cluster.cli(seed, "CLIENT", "KILL", "TYPE", "normal"), "1")
        test.run(until: "the link ended") { ended != nil }
        commands.close()
        test.closeAndCheckForLeaks()
    }

    func testNoSeedAnsweringWithASlotMapEndsIt() throws {
        let plain = try RedisServer()
        defer { plain.stop() }
        let test = try LeakCheckedLoop()
        var ended: RedisConnection.Failure?
        let commands = ClusterCommands(loop: test.loop, seeds: RedisClusterSeeds(seeds: [RedisEndpoint(host: "127.0.0.1", port: plain.port)]),
                                       timeoutMilliseconds: 2000, onReady: { XCTFail("ready without a slot map") }, onEnded: { ended = $0 })
        test.run(until: "it ended") { ended != nil }
        guard case .refused(let reason) = ended else { return XCTFail("\(String(describing: ended))") }
        XCTAssertTrue(reason.contains("cluster support disabled"), reason)
        XCTAssertFalse(commands.isReady)
        test.closeAndCheckForLeaks()
    }
}
