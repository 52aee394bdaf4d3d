import Endpoints
import HTTPClient
import Logging
import OAuth2
import SafeText
import Synchronization
import Tokens
import XCTest

/// `TokenService.replace` (a reload): unchanged identities keep their state object, and so their
/// token; changed and new ones start afresh with slots never used before. The identities use an
/// interactive grant, so the token thread makes no request.
final class TokenSetReplacementTests: XCTestCase {
    private final class Observed: TokenObserver {
        let events = Mutex<[String]>([])
        func tokenRequestEnded(identity: String, outcome: TokenRequestOutcome) {
            events.withLock { $0.append("request \(identity) \(outcome)") }
        }
        func tokenExpiryChanged(identity: String, unixTime: Double?) {
            events.withLock { $0.append("expiry \(identity) \(unixTime.map { "\($0)" } ?? "none")") }
        }
        func identityRemoved(_ name: String) {
            events.withLock { $0.append("removed \(name)") }
        }
    }

    private func identity(_ name: String, scope: String? = nil) -> Identity {
        Identity(name: name, tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                 grant: .authorizationCode(seed: nil), clientAuth: .publicClient(id: "client-\(name)"), scope: scope)
    }

    private func identities(_ list: Identity...) -> [String: Identity] {
        Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0) })
    }

    func testUnchangedIdentitiesAreKeptAndChangedOnesStartAfresh() throws {
        let observer = Observed()
        let service = try TokenService.start(identities: identities(identity("a"), identity("b", scope: "read")),
                                             limits: HTTPClientLimits(), logger: Logger(label: "test"), observer: observer)
        defer { service.stop() }
        let before = service.tokenSet
        let (a, b) = (before["a"]!, before["b"]!)

        let change = service.replace(identities: identities(identity("a"), identity("b", scope: "write"), identity("c")),
                                     tls: [:], limits: HTTPClientLimits())
        XCTAssertEqual(change.kept, ["a"])
        XCTAssertEqual(change.started, ["b", "c"])
        XCTAssertEqual(change.removed, [])
        XCTAssertTrue(change.set["a"] === a, "an unchanged identity keeps its state")
        XCTAssertFalse(change.set["b"] === b, "a changed identity starts afresh")
        XCTAssertEqual(change.set["b"]?.identity.scope, "write")
        let slots = [a.slot, b.slot, change.set["b"]!.slot, change.set["c"]!.slot]
        XCTAssertEqual(Set(slots).count, 4, "slots are never reused: \(slots)")
        XCTAssertEqual(service.identities.map(\.identity.name), ["a", "b", "c"])
        XCTAssertTrue(service.tokenSet["b"] === change.set["b"], "the new set is in force")

        let second = service.replace(identities: identities(identity("a")), tls: [:], limits: HTTPClientLimits())
        XCTAssertEqual(second.kept, ["a"])
        XCTAssertEqual(second.removed, ["b", "c"])
        XCTAssertNil(second.set["b"])
        XCTAssertEqual(service.identities.map(\.identity.name), ["a"])
        XCTAssertEqual(observer.events.withLock { $0 }, ["expiry b none", "removed b", "removed c"])
    }

    func testAnIdentityChangedOnlyInItsSecretIsNotKept() throws {
        var first = identity("a")
        first.clientAuth = .basic(id: "client-a", secret: Secret("one"))
        var rotated = first
        rotated.clientAuth = .basic(id: "client-a", secret: Secret("two"))
        let service = try TokenService.start(identities: identities(first), limits: HTTPClientLimits(), logger: Logger(label: "test"))
        defer { service.stop() }
        XCTAssertEqual(service.replace(identities: identities(first), tls: [:], limits: HTTPClientLimits()).kept, ["a"])
        XCTAssertEqual(service.replace(identities: identities(rotated), tls: [:], limits: HTTPClientLimits()).started, ["a"])
    }
    /// A worker's table of injected tokens is indexed by `cacheIndex`: however many reloads add
    /// and remove identities, the indexes in force stay below the most identities in force at
    /// once (five here), each taken once, while slots keep growing.
    func testCacheIndexesStayBelowTheIdentitiesInForceAcrossReloads() throws {
        let service = try TokenService.start(identities: identities(identity("kept")), limits: HTTPClientLimits(), logger: Logger(label: "test"))
        defer { service.stop() }
        let kept = service.tokenSet["kept"]!
        for round in 0..<200 {
            // Three to five identities each round: "kept", and new names, some of them kept a round.
            var list = [identity("kept"), identity("new-\(round)"), identity("new-\(round + 1)")]
            if round % 3 == 0 { list.append(identity("rare-\(round)")) }
            if round % 2 == 0 { list.append(identity("even-\(round)")) }
            let change = service.replace(identities: Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0) }),
                                         tls: [:], limits: HTTPClientLimits())
            let indexes = change.set.identities.map(\.cacheIndex)
            XCTAssertEqual(Set(indexes).count, indexes.count, "round \(round): an index taken twice: \(indexes)")
            XCTAssertLessThan(indexes.max()!, 5, "round \(round): \(indexes)")
        }
        XCTAssertTrue(service.tokenSet["kept"] === kept)
        XCTAssertGreaterThan(service.tokenSet["new-200"]!.slot, 200, "slots are never reused")
    }
}
