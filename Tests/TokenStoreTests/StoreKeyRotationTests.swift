import Crypto
import FileTestSupport
import Foundation
import OAuth2
import SafeText
import TokenStore
import XCTest

/// A store key rotated under a running relay (`StoreKeys`): entries are written with the new key,
/// entries under the previous one still read, and `reseal` moves them to the new key so that a
/// restart with the new key alone reads them.
final class StoreKeyRotationTests: XCTestCase {
    let oldKey = SymmetricKey([UInt8](repeating: 7, count: 32))
    let newKey = SymmetricKey([UInt8](repeating: 9, count: 32))
    let fingerprint = SettingsFingerprint(bytes: [UInt8](repeating: 0xab, count: 32))
    let token = StoredToken(access: .init(value: Secret("access-token-value-0123456789"), type: "Bearer", issuedAt: 1_700_000_000,
                                          expiresAt: 1_700_003_600, scope: "orders.read"),
                            refreshToken: Secret("refresh-token-value-abcdefgh"))
    var directory: TemporaryDirectory!
    var storePath: String { directory.path + "/store" }

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    private func keyID(ofEntry identity: String) throws -> [UInt8]? {
        StoreEntry.keyID(inEntry: try directory.bytes(of: "store/identity-\(identity).token"))
    }

    // MARK: - The ring

    func testRotatingKeepsTheReplacedKeysNewestFirstAndAtMostFour() {
        var ring = StoreKeyRing(oldKey)
        XCTAssertFalse(ring.rotate(to: oldKey))
        XCTAssertEqual(ring.previous, [])
        let keys = (1...6).map { SymmetricKey([UInt8](repeating: UInt8($0), count: 32)) }
        for key in keys { XCTAssertTrue(ring.rotate(to: key)) }
        XCTAssertEqual(ring.current, keys[5])
        XCTAssertEqual(ring.previous, [keys[4], keys[3], keys[2], keys[1]])
        XCTAssertEqual(ring.key(withID: StoreEntry.keyID(of: keys[2])), keys[2])
        XCTAssertNil(ring.key(withID: StoreEntry.keyID(of: oldKey)), "dropped beyond four")
        // Back to a previous key: it is current, and no longer listed as previous.
        XCTAssertTrue(ring.rotate(to: keys[3]))
        XCTAssertEqual(ring.previous, [keys[5], keys[4], keys[2], keys[1]])
    }

    // MARK: - Entries

    func testAnEntryUnderThePreviousKeyStillReadsAndTheNextWriteUsesTheNewKey() throws {
        let keys = StoreKeys(oldKey)
        let store = try TokenStore(path: storePath, keys: keys)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        XCTAssertTrue(keys.rotate(to: newKey))
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .found(token))
        XCTAssertEqual(try keyID(ofEntry: "orders"), StoreEntry.keyID(of: oldKey))
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        XCTAssertEqual(try keyID(ofEntry: "orders"), StoreEntry.keyID(of: newKey))
        XCTAssertEqual(try TokenStore(path: storePath, key: newKey).read(identity: "orders", fingerprint: fingerprint), .found(token))
    }

    func testResealingMovesEveryEntryToTheNewKeySoARestartWithItAloneReadsThem() throws {
        let keys = StoreKeys(oldKey)
        let store = try TokenStore(path: storePath, keys: keys)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        try store.write(token, identity: "billing", fingerprint: fingerprint)
        keys.rotate(to: newKey)
        try store.write(token, identity: "billing", fingerprint: fingerprint)
        let outcome = try store.reseal()
        XCTAssertEqual(outcome.resealed, ["orders"])
        XCTAssertEqual(outcome.busy, [])
        XCTAssertEqual(outcome.unreadable, [])
        let restarted = try TokenStore(path: storePath, key: newKey)
        XCTAssertEqual(try restarted.read(identity: "orders", fingerprint: fingerprint), .found(token))
        XCTAssertEqual(try restarted.read(identity: "billing", fingerprint: fingerprint), .found(token))
        XCTAssertThrowsError(try TokenStore(path: storePath, key: oldKey)) {
            XCTAssertEqual($0 as? StoreError, .wrongKey(path: self.storePath))
        }
        // Nothing left behind: two entries, two locks.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: storePath).sorted(),
                       ["identity-billing.lock", "identity-billing.token", "identity-orders.lock", "identity-orders.token"])
    }

    func testAnEntryLockedByAFetchIsLeftForItsWriter() throws {
        let keys = StoreKeys(oldKey)
        let store = try TokenStore(path: storePath, keys: keys)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        keys.rotate(to: newKey)
        let lock = try XCTUnwrap(try store.tryLock(identity: "orders"))
        XCTAssertEqual(try store.reseal().busy, ["orders"])
        XCTAssertEqual(try keyID(ofEntry: "orders"), StoreEntry.keyID(of: oldKey))
        lock.release()
        XCTAssertEqual(try store.reseal().resealed, ["orders"])
    }

    func testAnEntryUnderAKeyThisProcessDoesNotHoldIsNeitherUsedNorMovedAside() throws {
        // This process runs with the old key; another one took up a rotated key first and wrote with it.
        let lagging = try TokenStore(path: storePath, keys: StoreKeys(oldKey))
        let ahead = try TokenStore(path: storePath, key: newKey)
        try ahead.write(token, identity: "orders", fingerprint: fingerprint)
        try ahead.write(token, identity: "billing", fingerprint: fingerprint)
        XCTAssertEqual(try lagging.read(identity: "orders", fingerprint: fingerprint), .otherKey)
        XCTAssertEqual(try lagging.reseal().unreadable.sorted(), ["billing", "orders"])
        XCTAssertEqual(try TokenStore(path: storePath, key: newKey).read(identity: "orders", fingerprint: fingerprint), .found(token))
    }

    func testCheckAcceptsAStoreWrittenWithAKeyTheRunningRelayStillReads() throws {
        try TokenStore(path: storePath, key: oldKey).write(token, identity: "orders", fingerprint: fingerprint)
        XCTAssertThrowsError(try TokenStore.check(path: storePath, key: newKey))
        XCTAssertNoThrow(try TokenStore.check(path: storePath, key: newKey, previousKeys: [oldKey]))
    }

    func testResealedBytesKeepTheIdentityAndSettingsAndRefuseAForeignKey() throws {
        let bytes = try StoreEntry.encode(token, identity: "orders", fingerprint: fingerprint, key: oldKey)
        var ring = StoreKeyRing(oldKey)
        XCTAssertNil(try StoreEntry.resealed(bytes, identity: "orders", keys: ring), "already under the key in force")
        XCTAssertTrue(ring.rotate(to: newKey))
        let sealed = try XCTUnwrap(try StoreEntry.resealed(bytes, identity: "orders", keys: ring))
        XCTAssertEqual(try StoreEntry.decode(sealed, identity: "orders", fingerprint: fingerprint, key: newKey), token)
        XCTAssertThrowsError(try StoreEntry.resealed(bytes, identity: "orders", keys: StoreKeyRing(newKey))) {
            XCTAssertEqual($0 as? StoreEntry.ReadFailure, .otherKey)
        }
        XCTAssertThrowsError(try StoreEntry.resealed(bytes, identity: "billing", keys: ring), "the identity is authenticated")
    }
}
