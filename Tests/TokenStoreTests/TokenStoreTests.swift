import Crypto
import FileTestSupport
import Foundation
import OAuth2
import SafeText
import TokenStore
import XCTest

final class TokenStoreTests: XCTestCase {
    let key = SymmetricKey([UInt8](repeating: 7, count: 32))
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

    func testItCreatesItsDirectory0700AndEntries0600() throws {
        let store = try TokenStore(path: storePath + "/nested", key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        XCTAssertEqual(try directory.mode(of: "store"), 0o700)
        XCTAssertEqual(try directory.mode(of: "store/nested"), 0o700)
        XCTAssertEqual(try directory.mode(of: "store/nested/identity-orders.token"), 0o600)
    }

    func testCheckingAMissingStoreCreatesNothing() throws {
        XCTAssertNoThrow(try TokenStore.check(path: storePath, key: key))
        XCTAssertEqual(try directory.files(), [])
        XCTAssertNoThrow(try TokenStore.check(path: storePath + "/a/b", key: key))
        try directory.write([1], to: "file")
        XCTAssertThrowsError(try TokenStore.check(path: directory.path + "/file/store", key: key))
    }

    func testAWrittenEntryReadsBack() throws {
        let store = try TokenStore(path: storePath, key: key)
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .empty)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .found(token))
        // Another process opening the same directory with the same key reads it too.
        XCTAssertEqual(try TokenStore(path: storePath, key: key).read(identity: "orders", fingerprint: fingerprint), .found(token))
    }

    func testAWriteReplacesTheEntry() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        var newer = token
        newer.refreshToken = Secret("rotated")
        try store.write(newer, identity: "orders", fingerprint: fingerprint)
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .found(newer))
        XCTAssertEqual(try directory.files(), ["store"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: storePath), ["identity-orders.token"])
    }

    func testNoTokenIsReadableInTheDirectory() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        let text = String(decoding: try directory.bytes(of: "store/identity-orders.token"), as: UTF8.self)
        XCTAssertFalse(text.contains("access-token-value"))
        XCTAssertFalse(text.contains("refresh-token-value"))
    }

    func testRefusesADirectoryOthersMayWriteTo() throws {
        try FileManager.default.createDirectory(atPath: storePath, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
        chmod(storePath, 0o777)
        XCTAssertThrowsError(try TokenStore(path: storePath, key: key)) {
            guard case .unsafeDirectory(_, let reason) = $0 as? StoreError else { return XCTFail("\($0)") }
            XCTAssertTrue(reason.contains("writable by group or others"), reason)
        }
        XCTAssertThrowsError(try TokenStore.check(path: storePath, key: key))
        chmod(storePath, 0o700)
        XCTAssertNoThrow(try TokenStore.check(path: storePath, key: key))
    }

    func testRefusesAFileInsteadOfADirectory() throws {
        try directory.write([1], to: "store")
        XCTAssertThrowsError(try TokenStore(path: storePath, key: key)) {
            XCTAssertEqual($0 as? StoreError, .unsafeDirectory(path: self.storePath, reason: "not a directory"))
        }
    }

    func testAWrongKeyIsAClearErrorNamingTheStore() throws {
        try TokenStore(path: storePath, key: key).write(token, identity: "orders", fingerprint: fingerprint)
        XCTAssertThrowsError(try TokenStore(path: storePath, key: SymmetricKey([UInt8](repeating: 8, count: 32)))) {
            XCTAssertEqual($0 as? StoreError, .wrongKey(path: self.storePath))
            XCTAssertTrue("\($0)".contains(self.storePath))
        }
        XCTAssertThrowsError(try TokenStore.check(path: storePath, key: SymmetricKey([UInt8](repeating: 8, count: 32)))) {
            XCTAssertEqual($0 as? StoreError, .wrongKey(path: self.storePath))
        }
        XCTAssertNoThrow(try TokenStore.check(path: storePath, key: key))
        // Nothing was moved aside by the refusal.
        XCTAssertEqual(try TokenStore(path: storePath, key: key).read(identity: "orders", fingerprint: fingerprint), .found(token))
    }

    func testACorruptEntryIsMovedAsideAndReadsAsEmpty() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        var bytes = try directory.bytes(of: "store/identity-orders.token")
        bytes[bytes.count - 3] ^= 0xff
        try directory.write(bytes, to: "store/identity-orders.token")
        guard case .movedAside(_, let movedTo) = try store.read(identity: "orders", fingerprint: fingerprint) else {
            return XCTFail("not moved aside")
        }
        XCTAssertTrue(movedTo.hasPrefix(storePath + "/identity-orders.token.corrupt-"), movedTo)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: storePath), [(movedTo as NSString).lastPathComponent])
        // Moved once: the next read finds nothing, and the identity carries on.
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .empty)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .found(token))
    }

    func testAnEntryRenamedOntoAnotherIdentityDoesNotOpen() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        try FileManager.default.moveItem(atPath: storePath + "/identity-orders.token", toPath: storePath + "/identity-billing.token")
        guard case .movedAside = try store.read(identity: "billing", fingerprint: fingerprint) else { return XCTFail("opened") }
    }

    func testAnEntryForOtherSettingsIsNotUsedNorMoved() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        let changed = SettingsFingerprint(bytes: [UInt8](repeating: 1, count: 32))
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: changed), .otherSettings)
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .found(token))
    }

    /// A process killed between creating its temporary file and the rename leaves the temporary
    /// file behind: readers ignore it, and the next write of that entry removes it.
    func testALeftoverTemporaryFileIsIgnoredThenRemoved() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        try directory.write(Array("half an entr".utf8), to: "store/.identity-orders.token.tmp-99999-1")
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .found(token))
        XCTAssertEqual(try TokenStore(path: storePath, key: key).read(identity: "orders", fingerprint: fingerprint), .found(token))
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: storePath), ["identity-orders.token"])
    }

    /// A removal waits for the entry's lock (a re-seal under way would put the entry back under the
    /// new key): while it is held the entry stays and the removal times out; once free, it goes.
    func testRemoveWaitsForTheEntryLockAndLeavesTheEntryWhenItStaysHeld() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        let held = try store.lock(identity: "orders", timeout: 1)
        XCTAssertThrowsError(try store.remove(identity: "orders", lockTimeout: 0.05)) {
            guard case .lockTimedOut = $0 as? StoreError else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .found(token))
        try store.removeHoldingLock(identity: "orders")
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .empty)
        held.release()
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        try store.remove(identity: "orders", lockTimeout: 1)
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .empty)
    }

    func testRemoveDeletesTheEntry() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        try store.remove(identity: "orders", lockTimeout: 1)
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .empty)
        XCTAssertNoThrow(try store.remove(identity: "orders", lockTimeout: 1))
        // Writing nothing removes too.
        try store.write(token, identity: "orders", fingerprint: fingerprint)
        try store.write(StoredToken(access: nil, refreshToken: nil), identity: "orders", fingerprint: fingerprint)
        XCTAssertEqual(try store.read(identity: "orders", fingerprint: fingerprint), .empty)
    }

    func testNamesThatAreNoFileNameAreRefused() throws {
        let store = try TokenStore(path: storePath, key: key)
        for name in ["", "../x", "a/b", "a b", "\u{0}"] {
            XCTAssertThrowsError(try store.read(identity: name, fingerprint: fingerprint), name) {
                XCTAssertEqual($0 as? StoreError, .invalidName(name))
            }
        }
        // Dots alone stay inside the directory: the file is "identity-...token".
        try store.write(token, identity: "..", fingerprint: fingerprint)
        XCTAssertEqual(try store.read(identity: "..", fingerprint: fingerprint), .found(token))
    }

    func testTheKeyIs32BytesOfBase64() throws {
        let text = Data([UInt8](repeating: 7, count: 32)).base64EncodedString()
        XCTAssertEqual(try TokenStore.key(base64: text + "\n"), key)
        XCTAssertThrowsError(try TokenStore.key(base64: Data([1, 2, 3]).base64EncodedString())) {
            XCTAssertTrue("\($0)".contains("3 bytes, not 32"), "\($0)")
        }
        XCTAssertThrowsError(try TokenStore.key(base64: "not base64!")) {
            guard case .invalidKey = $0 as? StoreError else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try TokenStore(path: storePath, key: SymmetricKey([1, 2, 3])))
    }
}
