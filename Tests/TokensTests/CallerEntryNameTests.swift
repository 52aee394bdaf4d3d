import Crypto
import OAuth2
import RedisProtocol
import SafeText
import TokenStore
@testable import Tokens
import XCTest

/// A caller's entry in the shared store: its name (a keyed MAC of the caller's token, never the
/// token or a plain digest of it), its keys in every topology, and its entry bound to that name.
final class CallerEntryNameTests: XCTestCase {
    private let storeKey = SymmetricKey([UInt8](repeating: 7, count: 32))
    private let fingerprint = SettingsFingerprint(bytes: (0..<32).map { UInt8($0) })
    private let generation = "0123456789abcdef0123456789abcdef"
    private let caller = Secret("caller-token-x")

    private func name(storeKey: SymmetricKey? = nil, identity: String = "obo", fingerprint: SettingsFingerprint? = nil,
                      generation: String? = nil, caller: Secret? = nil) -> CallerEntryName {
        CallerEntryName(storeKey: storeKey ?? self.storeKey, identity: identity, fingerprint: fingerprint ?? self.fingerprint,
                        generation: generation ?? self.generation, caller: caller ?? self.caller)!
    }

    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    /// Computed apart from this code (Python's hmac): every process, whenever started, derives the
    /// same name from the same key, identity, settings, generation and caller.
    func testTheNameIsAKeyedMACStableAcrossProcesses() {
        XCTAssertEqual(text(name().hex), "7dff12ac0a005e28d5fea26bdc8c30ca8f6a0d75a22d0adc1b96ce68a40770eb")
        XCTAssertEqual(name(), name())
    }

    /// The identity's actor token (a secret, outside the fingerprint) keys the name too; without
    /// one the name is the one computed above.
    func testTheActorTokenChangesTheName() {
        func named(actor: Secret?) -> CallerEntryName {
            CallerEntryName(storeKey: storeKey, identity: "obo", fingerprint: fingerprint, generation: generation, caller: caller,
                            actor: actor)!
        }
        XCTAssertEqual(named(actor: nil), name())
        XCTAssertNotEqual(named(actor: Secret("actor-1")), name())
        XCTAssertNotEqual(named(actor: Secret("actor-1")), named(actor: Secret("actor-2")))
    }

    /// A MAC that fails makes no name, never a constant one that every caller would share.
    func testAFailingMACMakesNoName() {
        struct Failed: Error {}
        for failing in [0, 1] {
            var calls = 0
            let made = CallerEntryName(storeKey: storeKey, identity: "obo", fingerprint: fingerprint, generation: generation, caller: caller,
                                       mac: { message, key in
                                           defer { calls += 1 }
                                           if calls == failing { throw Failed() }
                                           return try HMACSHA256.authenticationCode(for: message, key: key)
                                       })
            XCTAssertNil(made, "the MAC failing at step \(failing)")
        }
        let short = CallerEntryName(storeKey: storeKey, identity: "obo", fingerprint: fingerprint, generation: generation, caller: caller,
                                    mac: { _, _ in [] })
        XCTAssertNil(short, "an empty MAC is no name either")
    }

    func testTheNameDiffersPerIdentitySettingsGenerationCallerAndStoreKey() {
        let names = [
            name(),
            name(identity: "obo2"),
            name(fingerprint: SettingsFingerprint(bytes: [UInt8](repeating: 9, count: 32))),
            name(generation: "fedcba9876543210fedcba9876543210"),
            name(caller: Secret("caller-token-y")),
            name(storeKey: SymmetricKey([UInt8](repeating: 8, count: 32))),
        ]
        XCTAssertEqual(Set(names.map(\.bytes)).count, names.count)
        // Length prefixes: moving bytes from one part to the next is another name.
        XCTAssertNotEqual(name(identity: "ob", generation: "o" + generation), name())
    }

    /// Redis sees the key, never the caller's token nor its SHA-256 (which anyone could check a
    /// candidate token against).
    func testTheKeysHoldNoCallerBytesAndNoPlainDigestOfThem() {
        let token = Secret("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl")
        let entryName = name(caller: token)
        for hashTagged in [false, true] {
            let keys = SharedEntryKeys(prefix: "oauth-relay:", identity: "obo", caller: entryName, hashTagged: hashTagged)
            for key in [keys.entry, keys.lease] {
                let shown = text(key)
                XCTAssertFalse(shown.contains(token.value))
                XCTAssertFalse(shown.contains("eyJ"))
                XCTAssertFalse(shown.contains(hex(SHA256.hash(Array(token.value.utf8)))))
            }
        }
        XCTAssertNotEqual(entryName.bytes, SHA256.hash(Array(token.value.utf8)))
    }

    func testCallerKeysNameThePrefixAndIdentityNeverAnotherIdentitysKeys() {
        let entryName = name()
        let hex = "7dff12ac0a005e28d5fea26bdc8c30ca8f6a0d75a22d0adc1b96ce68a40770eb"
        let keys = SharedEntryKeys(prefix: "oauth-relay:", identity: "obo", caller: entryName)
        XCTAssertEqual(text(keys.entry), "oauth-relay:obo/caller:" + hex)
        XCTAssertEqual(text(keys.lease), "oauth-relay:obo/caller:" + hex + ":lease")
        XCTAssertEqual(keys.channel, SharedEntryKeys.channel(prefix: "oauth-relay:"))
        // An identity named "obo" or "caller" with these digits as its fingerprint has other keys.
        for identity in ["obo", "caller"] {
            let own = SharedEntryKeys(prefix: "oauth-relay:", identity: identity, fingerprint: entryName.entryFingerprint)
            XCTAssertNotEqual(own.entry, keys.entry)
        }
        XCTAssertNil(SharedEntryKeys.removal(in: keys.entry), "a caller entry's write is no logout")
    }

    /// Redis Cluster: a caller's entry and lease in one slot (its own tag: callers spread over the
    /// slots); the callers' generation in the slot of the identity's own entry, so that a logout's
    /// script removes both on one node.
    func testClusterKeysKeepEachScriptOnOneNode() {
        let identityKeys = SharedEntryKeys(prefix: "oauth-relay:", identity: "obo", fingerprint: fingerprint, hashTagged: true)
        XCTAssertEqual(text(identityKeys.callerGeneration), text(identityKeys.entry) + ":callers")
        XCTAssertEqual(ClusterSlot(key: identityKeys.callerGeneration), ClusterSlot(key: identityKeys.entry))
        XCTAssertEqual(ClusterRouting.key(of: SharedEntryCommands.remove(identityKeys, by: "00000000000000aa")), identityKeys.entry)
        XCTAssertEqual(ClusterRouting.key(of: CallerGenerationCommands.read(identityKeys, fresh: generation)), identityKeys.callerGeneration)

        let hex = "7dff12ac0a005e28d5fea26bdc8c30ca8f6a0d75a22d0adc1b96ce68a40770eb"
        let keys = SharedEntryKeys(prefix: "oauth-relay:", identity: "obo", caller: name(), hashTagged: true)
        XCTAssertEqual(text(keys.entry), "oauth-relay:obo/caller:{" + hex + "}")
        XCTAssertEqual(ClusterSlot(key: keys.entry), ClusterSlot(key: keys.lease))
        XCTAssertEqual(ClusterSlot(key: keys.entry), ClusterSlot(key: Array(hex.utf8)))
        let slots = Set((0..<8).map { index in
            ClusterSlot(key: SharedEntryKeys(prefix: "oauth-relay:", identity: "obo", caller: name(caller: Secret("caller-\(index)")),
                                             hashTagged: true).entry)
        })
        XCTAssertGreaterThan(slots.count, 1, "one identity's callers spread over the slots")
    }

    /// The entry is the token store's format, bound to the caller's name: it opens under that name
    /// alone, and under a key the ring still holds after a rotation.
    func testTheEntryRoundTripsUnderItsNameOnly() throws {
        let access = StoredToken.Access(value: Secret("exchanged-token"), type: "Bearer", issuedAt: 1_000, expiresAt: 4_600, scope: "orders.read")
        let entryName = name()
        let bytes = try StoreEntry.encode(StoredToken(access: access, refreshToken: nil), identity: "obo",
                                          fingerprint: entryName.entryFingerprint, key: storeKey)
        XCTAssertFalse(text(bytes).contains("exchanged-token"))
        XCTAssertFalse(text(bytes).contains(caller.value))
        var ring = StoreKeyRing(storeKey)
        let read = try StoreEntry.decode(bytes, identity: "obo", fingerprint: entryName.entryFingerprint, keys: ring)
        XCTAssertEqual(read.access, access)
        XCTAssertNil(read.refreshToken)
        XCTAssertTrue(ring.rotate(to: SymmetricKey([UInt8](repeating: 8, count: 32))))
        XCTAssertEqual(try StoreEntry.decode(bytes, identity: "obo", fingerprint: entryName.entryFingerprint, keys: ring).access, access)

        let other = name(caller: Secret("caller-token-y"))
        XCTAssertThrowsError(try StoreEntry.decode(bytes, identity: "obo", fingerprint: other.entryFingerprint, keys: ring),
                             "an entry copied under another caller's name") { error in
            XCTAssertEqual(error as? StoreEntry.ReadFailure, .otherSettings)
        }
        XCTAssertThrowsError(try StoreEntry.decode(bytes, identity: "obo2", fingerprint: entryName.entryFingerprint, keys: ring))
    }
}
