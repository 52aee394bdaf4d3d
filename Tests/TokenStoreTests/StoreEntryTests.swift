import Crypto
import Endpoints
import OAuth2
import SafeText
import TokenStore
import XCTest

final class StoreEntryTests: XCTestCase {
    let key = SymmetricKey([UInt8](repeating: 7, count: 32))
    let fingerprint = SettingsFingerprint(bytes: [UInt8](repeating: 0xab, count: 32))
    let token = StoredToken(access: .init(value: Secret("access-token-value-0123456789"), type: "Bearer", issuedAt: 1_700_000_000.25,
                                          expiresAt: 1_700_003_600.5, scope: "orders.read"),
                            refreshToken: Secret("refresh-token-value-abcdefgh"), subject: "alice")

    private func entry() throws -> [UInt8] {
        try StoreEntry.encode(token, identity: "orders", fingerprint: fingerprint, key: key)
    }

    func testAnEntryOpensWithItsIdentitySettingsAndKey() throws {
        XCTAssertEqual(try StoreEntry.decode(entry(), identity: "orders", fingerprint: fingerprint, key: key), token)
    }

    func testEveryKindOfEntryRoundTrips() throws {
        let kinds = [
            StoredToken(access: nil, refreshToken: Secret("only-refresh")),
            StoredToken(access: .init(value: Secret("a"), type: "DPoP", issuedAt: 0, expiresAt: 1, scope: nil), refreshToken: nil),
            StoredToken(access: .init(value: Secret(""), type: "", issuedAt: -5, expiresAt: 1e12, scope: ""), refreshToken: Secret(""),
                        subject: "ü"),
        ]
        for kind in kinds {
            let bytes = try StoreEntry.encode(kind, identity: "a.b_c-d", fingerprint: fingerprint, key: key)
            XCTAssertEqual(try StoreEntry.decode(bytes, identity: "a.b_c-d", fingerprint: fingerprint, key: key), kind)
        }
    }

    func testEveryWriteDrawsAFreshNonce() throws {
        let nonces = try (0..<20).map { _ in Array(try entry()[45..<57]) }
        XCTAssertEqual(Set(nonces).count, 20)
    }

    func testNoTokenAppearsInTheBytes() throws {
        let text = String(decoding: try entry(), as: UTF8.self)
        XCTAssertFalse(text.contains("access-token-value"))
        XCTAssertFalse(text.contains("refresh-token-value"))
        XCTAssertFalse(text.contains("alice"))
    }

    func testAnEntryCopiedOntoAnotherIdentityDoesNotOpen() throws {
        XCTAssertThrowsError(try StoreEntry.decode(entry(), identity: "orderz", fingerprint: fingerprint, key: key)) {
            guard case .corrupt = $0 as? StoreEntry.ReadFailure else { return XCTFail("\($0)") }
        }
    }

    func testAnotherKeyIsToldApartFromDamage() throws {
        let other = SymmetricKey([UInt8](repeating: 8, count: 32))
        XCTAssertThrowsError(try StoreEntry.decode(entry(), identity: "orders", fingerprint: fingerprint, key: other)) {
            XCTAssertEqual($0 as? StoreEntry.ReadFailure, .otherKey)
        }
    }

    func testOtherSettingsAreToldApartFromDamage() throws {
        let changed = SettingsFingerprint(bytes: [UInt8](repeating: 0xac, count: 32))
        XCTAssertThrowsError(try StoreEntry.decode(entry(), identity: "orders", fingerprint: changed, key: key)) {
            XCTAssertEqual($0 as? StoreEntry.ReadFailure, .otherSettings)
        }
    }

    /// Flipping one bit of any part — magic, version, key id, fingerprint, nonce, ciphertext,
    /// tag — never yields a token.
    func testATamperedByteInAnyPartDoesNotOpen() throws {
        let bytes = try entry()
        let parts: [(String, Int, StoreEntry.ReadFailure?)] = [
            ("magic", 0, nil), ("version", 4, nil), ("key id", 5, .otherKey), ("fingerprint", 13, .otherSettings),
            ("nonce", 45, nil), ("ciphertext", 60, nil), ("tag", bytes.count - 1, nil),
        ]
        for (part, offset, expected) in parts {
            var tampered = bytes
            tampered[offset] ^= 0x01
            XCTAssertThrowsError(try StoreEntry.decode(tampered, identity: "orders", fingerprint: fingerprint, key: key), part) {
                let failure = $0 as? StoreEntry.ReadFailure
                if let expected {
                    XCTAssertEqual(failure, expected, part)
                } else {
                    guard case .corrupt = failure else { return XCTFail("\(part): \($0)") }
                }
            }
        }
    }

    func testTruncatedEntriesDoNotOpen() throws {
        let bytes = try entry()
        for count in [0, 3, 44, 45, 56, bytes.count - 1] {
            XCTAssertThrowsError(try StoreEntry.decode(Array(bytes.prefix(count)), identity: "orders", fingerprint: fingerprint, key: key),
                                 "\(count) bytes") {
                guard case .corrupt = $0 as? StoreEntry.ReadFailure else { return XCTFail("\($0)") }
            }
        }
    }

    func testAKnownNonceGivesAStableEntry() throws {
        let nonce = [UInt8](repeating: 1, count: 12)
        let first = try StoreEntry.encode(token, identity: "orders", fingerprint: fingerprint, key: key, nonce: nonce)
        let second = try StoreEntry.encode(token, identity: "orders", fingerprint: fingerprint, key: key, nonce: nonce)
        XCTAssertEqual(first, second)
        XCTAssertEqual(Array(first.prefix(5)), Array("ORTS".utf8) + [1])
    }

    /// The layout written at the top of StoreEntry.swift, built by hand: header, then nonce,
    /// ciphertext and tag sealed over the documented associated data and tagged fields.
    func testTheFormatIsAsDocumented() throws {
        func field(_ tag: UInt8, _ bytes: [UInt8]) -> [UInt8] {
            [tag, 0, 0, 0, UInt8(bytes.count)] + bytes
        }
        let plaintext = field(6, Array("refresh".utf8)) + field(7, Array("sub".utf8))
        let associatedData = Array("oauth-relay token store".utf8) + [0, 1, 0, 6] + Array("orders".utf8) + fingerprint.bytes
        let box = try AESGCM.seal(plaintext, key: key, authenticating: associatedData)
        let header = Array("ORTS".utf8) + [1] + Array(try HMACSHA256.authenticationCode(for: Array("oauth-relay token store key id".utf8), key: key).prefix(8))
        let bytes = header + fingerprint.bytes + box.combined
        XCTAssertEqual(try StoreEntry.decode(bytes, identity: "orders", fingerprint: fingerprint, key: key),
                       StoredToken(access: nil, refreshToken: Secret("refresh"), subject: "sub"))
    }

    func testFieldsOutOfOrderOrUnknownAreDamage() throws {
        func sealed(_ plaintext: [UInt8]) throws -> [UInt8] {
            let box = try AESGCM.seal(plaintext, key: key, authenticating: StoreEntry.associatedDataForTesting(identity: "orders", fingerprint: fingerprint))
            return Array("ORTS".utf8) + [1] + StoreEntry.keyID(of: key) + fingerprint.bytes + box.combined
        }
        let cases: [(String, [UInt8])] = [
            ("out of order", [7, 0, 0, 0, 1, 0x61, 6, 0, 0, 0, 1, 0x62]),
            ("repeated", [6, 0, 0, 0, 1, 0x61, 6, 0, 0, 0, 1, 0x62]),
            ("unknown tag", [8, 0, 0, 0, 0]),
            ("length past the end", [6, 0, 0, 0, 9, 0x61]),
            ("access token without its times", [1, 0, 0, 0, 1, 0x61, 2, 0, 0, 0, 0]),
            ("invalid UTF-8", [6, 0, 0, 0, 1, 0xff]),
        ]
        for (what, plaintext) in cases {
            XCTAssertThrowsError(try StoreEntry.decode(try sealed(plaintext), identity: "orders", fingerprint: fingerprint, key: key), what)
        }
    }

    func testTheKeyIDDependsOnTheKeyAlone() {
        XCTAssertEqual(StoreEntry.keyID(of: key), StoreEntry.keyID(of: SymmetricKey([UInt8](repeating: 7, count: 32))))
        XCTAssertNotEqual(StoreEntry.keyID(of: key), StoreEntry.keyID(of: SymmetricKey([UInt8](repeating: 9, count: 32))))
        XCTAssertEqual(StoreEntry.keyID(of: key).count, 8)
    }

    func testDescriptionsShowNoToken() {
        let text = "\(token) \(String(reflecting: token))"
        XCTAssertFalse(text.contains("access-token-value"), text)
        XCTAssertFalse(text.contains("refresh-token-value"), text)
    }
}
