import Crypto
import Endpoints
import EventLoop
import Foundation
import Logging
import LoopTestSupport
import OAuth2
import RedisProtocol
import SafeText
import TokenStore
@testable import Tokens
import XCTest

/// Per-caller tokens shared by replicas through a real Redis (SharedTokens.callerToken): two
/// SharedTokens on one loop are two replicas; each exchange is counted, by caller.
final class SharedCallerTokensTests: XCTestCase {
    /// The identities' own fetches play no part: none is started.
    private final class Driver: SharedTokensDriver {
        var removed: [String] = []
        func fetchLocally(_ request: TokenRequest, for tokens: IdentityTokens) { XCTFail("no identity fetch") }
        func send(_ request: TokenRequest, for tokens: IdentityTokens) { XCTFail("no identity fetch") }
        func fetchSatisfied(_ tokens: IdentityTokens) {}
        func sharedLoginRemoved(_ tokens: IdentityTokens) { removed.append(tokens.identity.name) }
        func sharedEntryRead(_ token: AccessToken?, refreshToken: Secret?, for tokens: IdentityTokens) -> TokenLifecycle.StoredEntryOutcome {
            .satisfied
        }
    }

    private final class Counts: TokenObserver, @unchecked Sendable {
        var operations: [String: Int] = [:]
        func tokenRequestEnded(identity: String, outcome: TokenRequestOutcome) {}
        func tokenExpiryChanged(identity: String, unixTime: Double?) {}
        func identityRemoved(_ name: String) {}
        func storeOperation(backend: String, outcome: String) { operations[outcome, default: 0] += 1 }
    }

    /// The IdP's side: exchanges counted by caller, answered at once or held until `release`.
    private final class Exchanges {
        var byCaller: [String: Int] = [:]
        var held: [CallerTokenCompletion] = []
        var hold = false
        private var issued = 0

        func exchange(for caller: String) -> CallerTokenExchange {
            { [self] completion in
                byCaller[caller, default: 0] += 1
                if hold { return held.append(completion) }
                completion(.success(token()))
            }
        }

        func token() -> TokenResponse {
            issued += 1
            return TokenResponse(accessToken: Secret("exchanged-\(issued)"), expiresIn: 3600)
        }

        func release() {
            let waiting = held
            held = []
            for completion in waiting { completion(.success(token())) }
        }
    }

    private final class Answers {
        var tokens: [String] = []
        var failures = 0
        func record(_ outcome: CallerTokenOutcome) {
            switch outcome {
            case .success(let response): tokens.append(response.accessToken.value)
            case .failure: failures += 1
            }
        }
    }

    private let identity = Identity(name: "obo", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                    grant: .tokenExchange(subject: ExchangedToken(), actor: ExchangedToken()),
                                    clientAuth: .publicClient(id: "orders-relay"))
    private let storeKey = SymmetricKey([UInt8](repeating: 7, count: 32))

    private func replica(_ test: LeakCheckedLoop, port: UInt16, driver: Driver, observer: Counts? = nil, keys: StoreKeys? = nil) -> SharedTokens {
        let settings = SharedStoreSettings(topology: .server(RedisEndpoint(host: "127.0.0.1", port: port)), keyPrefix: "test:",
                                           timeoutMilliseconds: 2000, keys: keys ?? StoreKeys(storeKey))
        return SharedTokens(settings: settings, loop: test.loop, logger: Logger(label: "test"), observer: observer, driver: driver)
    }

    private func ask(_ shared: SharedTokens, _ tokens: IdentityTokens, caller: String, exchanges: Exchanges, answers: Answers,
                     callerExpiresAt: Double? = nil, refused: String? = nil) {
        shared.callerToken(for: tokens, caller: Secret(caller), callerExpiresAt: callerExpiresAt, refused: refused.map(Secret.init),
                           leaseMilliseconds: 10_000,
                           exchange: exchanges.exchange(for: caller), completion: answers.record)
    }

    private func cli(_ server: RedisServer, _ arguments: [String]) throws -> String {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-h", "127.0.0.1", "-p", String(server.port)] + arguments
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    func testACallersTokenObtainedThroughOneReplicaServesTheOther() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let driver = Driver()
        let (firstCounts, secondCounts) = (Counts(), Counts())
        let first = replica(test, port: server.port, driver: driver, observer: firstCounts)
        let second = replica(test, port: server.port, driver: driver, observer: secondCounts)
        test.run(until: "both links are up") { first.link.isReady && second.link.isReady }
        let exchanges = Exchanges()
        let answers = Answers()

        ask(first, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the first replica's answer and write") { answers.tokens.count == 1 && firstCounts.operations["ok"] == 3 }
        ask(second, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the second replica's answer") { answers.tokens.count == 2 }
        XCTAssertEqual(answers.tokens, ["exchanged-1", "exchanged-1"])
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 1])
        // Round trips: the generation (once per identity), the entry read with the lease taken in
        // one step, the write; the other replica: the generation, the entry read.
        XCTAssertEqual(firstCounts.operations, ["ok": 3])
        XCTAssertEqual(secondCounts.operations, ["ok": 2])

        // Another caller is another entry; the same caller again is a hit on either replica.
        ask(second, tokens, caller: "caller-y", exchanges: exchanges, answers: answers)
        ask(first, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "both answers") { answers.tokens.count == 4 }
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 1, "caller-y": 1])

        first.stop()
        second.stop()
        test.closeAndCheckForLeaks()
    }

    /// An upstream refused the caller's token that one replica wrote: the other replica's
    /// exchange after that refusal does not take the same token back from Redis; it exchanges
    /// and overwrites the entry, which then serves the first replica.
    func testAnExchangeAfterARefusalReplacesTheRefusedTokenInRedis() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let driver = Driver()
        let firstCounts = Counts()
        let first = replica(test, port: server.port, driver: driver, observer: firstCounts)
        let second = replica(test, port: server.port, driver: driver)
        test.run(until: "both links are up") { first.link.isReady && second.link.isReady }
        let exchanges = Exchanges()
        let answers = Answers()

        ask(first, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the first replica's answer and write") { answers.tokens.count == 1 && firstCounts.operations["ok"] == 3 }
        ask(second, tokens, caller: "caller-x", exchanges: exchanges, answers: answers, refused: "exchanged-1")
        test.run(until: "the second replica's answer") { answers.tokens.count == 2 }
        XCTAssertEqual(answers.tokens, ["exchanged-1", "exchanged-2"])
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 2])
        // A refusal of a token other than the entry's leaves the entry's token the answer.
        ask(first, tokens, caller: "caller-x", exchanges: exchanges, answers: answers, refused: "exchanged-1")
        test.run(until: "the first replica's answer from the new entry") { answers.tokens.count == 3 }
        XCTAssertEqual(answers.tokens.last, "exchanged-2")
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 2])

        first.stop()
        second.stop()
        test.closeAndCheckForLeaks()
    }

    /// A reload retired the identity: a late exchange for it runs alone and registers nothing
    /// (its slot would stay for good); a new slot with the same name and settings shares the
    /// entry, and retiring the old one leaves the new one what a removal's message resolves to.
    func testARetiredSlotIsNeverRegisteredAgainAndSlotsSharingAnEntryStayApart() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let old = IdentityTokens(identity: identity, slot: 0)
        let new = IdentityTokens(identity: identity, slot: 1)
        let entry = SharedEntryKeys(prefix: "test:", identity: identity.name, fingerprint: SettingsFingerprint(identity), hashTagged: false).entry
        let shared = replica(test, port: server.port, driver: Driver())
        test.run(until: "the link is up") { shared.link.isReady }
        let exchanges = Exchanges()
        let answers = Answers()
        ask(shared, old, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the first answer") { answers.tokens.count == 1 }
        ask(shared, new, caller: "caller-y", exchanges: exchanges, answers: answers)
        test.run(until: "the new slot's answer") { answers.tokens.count == 2 }
        XCTAssertEqual(shared.callers.registeredSlots, [0, 1])
        XCTAssertTrue(shared.callers.identity(entry: entry) === new)
        shared.callers.retire(slot: 0)
        XCTAssertTrue(shared.callers.identity(entry: entry) === new, "the slot in force still answers a removal")

        shared.callerToken(for: old, caller: Secret("caller-z"), callerExpiresAt: nil, leaseMilliseconds: 10_000, inForce: false,
                           exchange: exchanges.exchange(for: "caller-z"), completion: answers.record)
        test.run(until: "the retired slot's late answer") { answers.tokens.count == 3 }
        XCTAssertEqual(shared.callers.registeredSlots, [1], "the retired slot stays gone")
        shared.callers.retire(slot: 1)
        XCTAssertEqual(shared.callers.registeredSlots, [])
        XCTAssertNil(shared.callers.identity(entry: entry))

        shared.stop()
        test.closeAndCheckForLeaks()
    }

    /// A reload retires the identity while Redis's first connection is being made: the asks that
    /// waited for it go without Redis once it is up, not never.
    func testAsksOfASlotRetiredBeforeTheFirstConnectionGoAlone() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let counts = Counts()
        let shared = replica(test, port: server.port, driver: Driver(), observer: counts)
        let exchanges = Exchanges()
        let answers = Answers()
        XCTAssertFalse(shared.link.isReady)
        ask(shared, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        shared.callers.retire(slot: 0)
        test.run(until: "the ask's answer once the link is up") { answers.tokens.count == 1 }
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 1])
        XCTAssertEqual(counts.operations["skipped"], 1)

        shared.stop()
        test.closeAndCheckForLeaks()
    }

    /// A new caller's requests reach both replicas at once while the exchange takes its time:
    /// one replica exchanges, the other waits for its write, and every ask gets that one token.
    func testConcurrentAsksOfANewCallerOnTwoReplicasMakeOneExchange() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let driver = Driver()
        let replicas = [replica(test, port: server.port, driver: driver), replica(test, port: server.port, driver: driver)]
        test.run(until: "both links are up") { replicas.allSatisfy { $0.link.isReady } }
        let exchanges = Exchanges()
        exchanges.hold = true
        let answers = Answers()

        for index in 0..<100 { ask(replicas[index % 2], tokens, caller: "caller-new", exchanges: exchanges, answers: answers) }
        test.run(until: "one replica exchanges and the other waits for its lease") {
            exchanges.held.count == 1 && replicas.contains { $0.callers.isWaiting }
        }
        exchanges.release()
        test.run(until: "every ask's answer") { answers.tokens.count + answers.failures == 100 }
        XCTAssertEqual(answers.failures, 0)
        XCTAssertEqual(Set(answers.tokens), ["exchanged-1"])
        XCTAssertEqual(exchanges.byCaller, ["caller-new": 1])

        for shared in replicas { shared.stop() }
        test.closeAndCheckForLeaks()
    }

    /// Redis unreachable: each ask exchanges alone, at once, counted as skipped; nothing is kept.
    func testWithoutRedisEachAskExchangesAlone() throws {
        let server = try RedisServer()
        let port = server.port
        server.stop()
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let counts = Counts()
        let shared = replica(test, port: port, driver: Driver(), observer: counts)
        let exchanges = Exchanges()
        let answers = Answers()

        ask(shared, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the answer, once the first connection failed") { answers.tokens.count == 1 }
        ask(shared, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        XCTAssertEqual(answers.tokens, ["exchanged-1", "exchanged-2"], "answered at once, without waiting for Redis")
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 2])
        XCTAssertEqual(counts.operations["skipped"], 2)

        shared.stop()
        test.closeAndCheckForLeaks()
    }

    /// A logout through one replica deletes the callers' generation: the other replica hears it,
    /// tells its caller side, and its next ask for the same caller exchanges again; the replica
    /// that logged out then takes that new token.
    func testALogoutThroughOneReplicaMakesTheOtherExchangeAgain() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let firstDriver = Driver()
        let secondDriver = Driver()
        let first = replica(test, port: server.port, driver: firstDriver)
        let second = replica(test, port: server.port, driver: secondDriver)
        var forgotten: [String] = []
        second.callers.forgotten = { forgotten.append($0.identity.name) }
        first.callers.forgotten = { _ in XCTFail("a replica's own logout is the caller side's") }
        test.run(until: "both links are up") { first.link.isReady && second.link.isReady }
        let exchanges = Exchanges()
        let answers = Answers()
        ask(first, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the first answer") { answers.tokens.count == 1 }
        ask(second, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the second answer") { answers.tokens.count == 2 }
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 1])

        var removal: SharedStoreRemoval?
        first.remove(tokens) { removal = $0 }
        test.run(until: "the other replica heard of the logout") { removal != nil && forgotten == ["obo"] }
        XCTAssertEqual(removal, .removed)
        XCTAssertEqual(secondDriver.removed, ["obo"])
        XCTAssertEqual(firstDriver.removed, [])

        ask(second, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the answer after the logout") { answers.tokens.count == 3 }
        XCTAssertEqual(answers.tokens.last, "exchanged-2")
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 2])
        ask(first, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the logging-out replica's answer") { answers.tokens.count == 4 }
        XCTAssertEqual(answers.tokens.last, "exchanged-2")
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 2])

        first.stop()
        second.stop()
        test.closeAndCheckForLeaks()
    }

    /// What anyone reading Redis sees: no caller's token, nor its SHA-256, nor an exchanged token;
    /// the caller's entry expires with the earlier of the two tokens.
    func testRedisHoldsNoCallerTokenAndTheEntryExpiresWithTheCaller() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let shared = replica(test, port: server.port, driver: Driver())
        test.run(until: "the link is up") { shared.link.isReady }
        let exchanges = Exchanges()
        let answers = Answers()
        let caller = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
        ask(shared, tokens, caller: caller, exchanges: exchanges, answers: answers, callerExpiresAt: Date().timeIntervalSince1970 + 120)
        test.run(until: "the answer") { answers.tokens.count == 1 }
        var keys: [String] = []
        test.run(until: "the entry written") {
            keys = ((try? self.cli(server, ["--scan"])) ?? "").split(separator: "\n").map(String.init).sorted()
            return keys.count == 2
        }
        let generation = try XCTUnwrap(keys.first { $0.hasSuffix(":callers") })
        let entry = try XCTUnwrap(keys.first { $0.hasPrefix("test:obo/caller:") })
        XCTAssertEqual(entry.count, "test:obo/caller:".count + 64)
        let everything = keys.joined(separator: "\n") + (try cli(server, ["GET", generation])) + (try cli(server, ["HGETALL", entry]))
        for shown in [caller, "eyJ", hex(SHA256.hash(Array(caller.utf8))), "exchanged-1"] {
            XCTAssertFalse(everything.contains(shown), "\(shown.prefix(12))… is readable in Redis")
        }
        let ttl = try XCTUnwrap(Int(try cli(server, ["PTTL", entry]).trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertLessThanOrEqual(ttl, 120_000, "cut at the caller's expiry")
        XCTAssertGreaterThan(ttl, 100_000)
        XCTAssertEqual(try cli(server, ["PTTL", generation]).trimmingCharacters(in: .whitespacesAndNewlines), "-1")

        shared.stop()
        test.closeAndCheckForLeaks()
    }

    /// A rotated store key derives other names: the caller's token is exchanged once more (its old
    /// entry expires by its TTL), then shared under the new key.
    func testARotatedStoreKeyCostsOneMoreExchangePerCaller() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let keys = StoreKeys(storeKey)
        let shared = replica(test, port: server.port, driver: Driver(), keys: keys)
        test.run(until: "the link is up") { shared.link.isReady }
        let exchanges = Exchanges()
        let answers = Answers()
        ask(shared, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the first answer") { answers.tokens.count == 1 }
        keys.rotate(to: SymmetricKey([UInt8](repeating: 8, count: 32)))
        ask(shared, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the answer under the new key") { answers.tokens.count == 2 }
        XCTAssertEqual(exchanges.byCaller, ["caller-x": 2])
        let other = replica(test, port: server.port, driver: Driver(), keys: StoreKeys(SymmetricKey([UInt8](repeating: 8, count: 32))))
        test.run(until: "the other link is up") { other.link.isReady }
        ask(other, tokens, caller: "caller-x", exchanges: exchanges, answers: answers)
        test.run(until: "the other replica's answer") { answers.tokens.count == 3 }
        XCTAssertEqual(answers.tokens, ["exchanged-1", "exchanged-2", "exchanged-2"])

        shared.stop()
        other.stop()
        test.closeAndCheckForLeaks()
    }
}
