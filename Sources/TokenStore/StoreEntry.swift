// The bytes of one token store entry (format version 1), with no file system involved:
//
//   offset  size  field
//   0       4     magic "ORTS"
//   4       1     format version (1)
//   5       8     key id: the first 8 bytes of HMAC-SHA256(key, "oauth-relay token store key id")
//   13      32    settings fingerprint (SettingsFingerprint)
//   45      12    nonce, fresh for every write
//   57      n     ciphertext of the plaintext below (AES-256-GCM)
//   57+n    16    tag
//
// The associated data is "oauth-relay token store" 0x00, the version, the identity name
// (length-prefixed) and the fingerprint, so an entry copied onto another identity's file, or
// written for other settings, does not open. The key id and the fingerprint are in the clear
// only so that a reader can tell "another key" and "other settings" from corruption; neither
// tells anything about the key or a token (an HMAC output, a digest without secrets).
//
// The plaintext is a list of tagged fields (`Tag`): the access token, its type, the Unix times
// it was requested and expires, its scope, the refresh token and the subject.

import Crypto
import OAuth2
import SafeText

public enum StoreEntry {
    public static let formatVersion: UInt8 = 1
    static let magic: [UInt8] = Array("ORTS".utf8)
    static let keyIDByteCount = 8
    static let headerByteCount = 4 + 1 + keyIDByteCount + SettingsFingerprint.byteCount

    /// Why bytes did not read as an entry for this identity, settings and key.
    public enum ReadFailure: Error, Equatable, Sendable, CustomStringConvertible {
        /// Not an entry of a version this relay reads, or damaged (a tag that does not verify,
        /// a plaintext that is no entry).
        case corrupt(String)
        /// Written with another key.
        case otherKey
        /// Written for other settings of the identity: valid, but not to be used.
        case otherSettings

        public var description: String {
            switch self {
            case .corrupt(let reason): reason
            case .otherKey: "written with another key"
            case .otherSettings: "written for other settings of the identity"
            }
        }
    }

    /// The key's id as stored in each entry's header.
    public static func keyID(of key: SymmetricKey) -> [UInt8] {
        // HMAC with a non-empty key fails only when OpenSSL cannot allocate.
        let code = (try? HMACSHA256.authenticationCode(for: Array("oauth-relay token store key id".utf8), key: key)) ?? []
        return Array(code.prefix(keyIDByteCount))
    }

    /// The key id in an entry's header, if it has a header of this format.
    public static func keyID(inEntry bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= headerByteCount, Array(bytes.prefix(4)) == magic, bytes[4] == formatVersion else { return nil }
        return Array(bytes[5..<(5 + keyIDByteCount)])
    }

    /// The entry's bytes, sealed under a fresh nonce (or `nonce`, in tests).
    public static func encode(_ token: StoredToken, identity: String, fingerprint: SettingsFingerprint, key: SymmetricKey,
                              nonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        let header = magic + [formatVersion] + keyID(of: key) + fingerprint.bytes
        let box = try AESGCM.seal(plaintext(of: token), key: key,
                                  authenticating: associatedData(identity: identity, fingerprint: fingerprint), nonce: nonce)
        return header + box.combined
    }

    /// The token in `bytes`, if they are an entry for `identity` with `fingerprint` under one of
    /// `keys` (the one its key id names); `otherKey` when the ring holds no such key.
    public static func decode(_ bytes: [UInt8], identity: String, fingerprint: SettingsFingerprint,
                              keys: StoreKeyRing) throws(ReadFailure) -> StoredToken {
        let key = keyID(inEntry: bytes).flatMap(keys.key(withID:)) ?? keys.current
        return try decode(bytes, identity: identity, fingerprint: fingerprint, key: key)
    }

    /// The entry sealed again under `keys.current`, for the same identity and settings (its
    /// fingerprint is kept as it is); nil when it already is under the current key. Throws when
    /// it opens under none of the keys (`otherKey`) or not at all.
    public static func resealed(_ bytes: [UInt8], identity: String, keys: StoreKeyRing) throws(ReadFailure) -> [UInt8]? {
        guard let id = keyID(inEntry: bytes) else { throw .corrupt("not a token store entry of version \(formatVersion)") }
        guard !ConstantTime.equal(id, keyID(of: keys.current)) else { return nil }
        guard let key = keys.key(withID: id) else { throw .otherKey }
        let fingerprint = SettingsFingerprint(bytes: Array(bytes[(5 + keyIDByteCount)..<headerByteCount]))
        let token = try decode(bytes, identity: identity, fingerprint: fingerprint, key: key)
        do {
            return try encode(token, identity: identity, fingerprint: fingerprint, key: keys.current)
        } catch {
            throw .corrupt("could not be sealed under the new key: \(error)")
        }
    }

    /// The token in `bytes`, if they are an entry for `identity` with `fingerprint` under `key`.
    public static func decode(_ bytes: [UInt8], identity: String, fingerprint: SettingsFingerprint,
                              key: SymmetricKey) throws(ReadFailure) -> StoredToken {
        guard bytes.count >= headerByteCount else { throw .corrupt("shorter than an entry's header") }
        guard Array(bytes.prefix(4)) == magic else { throw .corrupt("not a token store entry") }
        guard bytes[4] == formatVersion else { throw .corrupt("entry format version \(bytes[4]) is not 1") }
        guard ConstantTime.equal(Array(bytes[5..<(5 + keyIDByteCount)]), keyID(of: key)) else { throw .otherKey }
        guard Array(bytes[(5 + keyIDByteCount)..<headerByteCount]) == fingerprint.bytes else { throw .otherSettings }
        let box: AESGCM.SealedBox
        do {
            box = try AESGCM.SealedBox(combined: Array(bytes[headerByteCount...]))
        } catch {
            throw .corrupt("truncated")
        }
        let plaintext: [UInt8]
        do {
            plaintext = try AESGCM.open(box, key: key, authenticating: associatedData(identity: identity, fingerprint: fingerprint))
        } catch {
            throw .corrupt("does not decrypt (damaged, or not this identity's entry)")
        }
        guard let token = token(from: plaintext) else { throw .corrupt("decrypts to no entry") }
        return token
    }

    /// The associated data of an identity's entries, for the fuzz target, which seals its own
    /// plaintexts to reach the field reader.
    public static func associatedDataForTesting(identity: String, fingerprint: SettingsFingerprint) -> [UInt8] {
        associatedData(identity: identity, fingerprint: fingerprint)
    }

    static func associatedData(identity: String, fingerprint: SettingsFingerprint) -> [UInt8] {
        let name = Array(identity.utf8)
        let count = UInt16(clamping: name.count)
        return Array("oauth-relay token store".utf8) + [0, formatVersion, UInt8(count >> 8), UInt8(count & 0xff)]
            + name.prefix(Int(count)) + fingerprint.bytes
    }

    // MARK: - Plaintext

    /// Plaintext fields, each written as tag, 4-byte big-endian length, bytes; tags strictly
    /// increasing. A binary form rather than JSON so that reading it is exact and small (the
    /// fuzz target holds it to: what decodes encodes to the same bytes).
    enum Tag: UInt8 {
        case accessValue = 1, accessType, issuedAt, expiresAt, scope, refreshToken, subject
    }

    static func plaintext(of token: StoredToken) -> [UInt8] {
        var fields = TaggedFields()
        func append(_ tag: Tag, _ value: [UInt8]) { fields.append(tag.rawValue, value) }
        func append(_ tag: Tag, time: Double) { fields.append(tag.rawValue, time: time) }
        if let access = token.access {
            append(.accessValue, Array(access.value.value.utf8))
            append(.accessType, Array(access.type.utf8))
            append(.issuedAt, time: access.issuedAt)
            append(.expiresAt, time: access.expiresAt)
            if let scope = access.scope { append(.scope, Array(scope.utf8)) }
        }
        if let refreshToken = token.refreshToken { append(.refreshToken, Array(refreshToken.value.utf8)) }
        if let subject = token.subject { append(.subject, Array(subject.utf8)) }
        return fields.bytes
    }

    /// The token in a decrypted plaintext; nil unless it is exactly what `plaintext(of:)` writes.
    static func token(from plaintext: [UInt8]) -> StoredToken? {
        guard let fields = TaggedFields.read(plaintext, isKnown: { Tag(rawValue: $0) != nil }) else { return nil }
        func text(_ tag: Tag) -> String?? { TaggedFields.text(fields[tag.rawValue]) }
        // Absent and damaged alike: a token needs both times.
        func time(_ tag: Tag) -> Double? { TaggedFields.time(fields[tag.rawValue]) ?? nil }
        guard let value = text(.accessValue), let type = text(.accessType), let scope = text(.scope),
              let refreshToken = text(.refreshToken), let subject = text(.subject) else { return nil }
        var token = StoredToken(access: nil, refreshToken: refreshToken.map(Secret.init), subject: subject)
        let accessTags: [Tag] = [.accessValue, .accessType, .issuedAt, .expiresAt]
        if accessTags.contains(where: { fields[$0.rawValue] != nil }) || scope != nil {
            guard let value, let type, let issuedAt = time(.issuedAt), let expiresAt = time(.expiresAt) else { return nil }
            token.access = StoredToken.Access(value: Secret(value), type: type, issuedAt: issuedAt, expiresAt: expiresAt, scope: scope)
        }
        return token
    }
}
