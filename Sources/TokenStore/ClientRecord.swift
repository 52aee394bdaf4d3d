// The bytes of one kept client registration (an `auto` identity's RFC 7591 client, format
// version 1), with no file system involved; the same bytes go to the file store
// (`client-NAME.registration`) and to Redis (`PREFIX client:NAME`):
//
//   offset  size  field
//   0       4     magic "ORRC"
//   4       1     format version (1)
//   5       8     key id (StoreEntry.keyID: the store key's)
//   13      4     k: the length of the registration key's fields (big-endian)
//   17      k     the RegistrationKey's fields (`keyFields`): identity, issuer, redirect URI,
//                 client authentication, each length-prefixed
//   17+k    12    nonce, fresh for every write
//   29+k    n     ciphertext of the plaintext below (AES-256-GCM)
//   29+k+n  16    tag
//
// The associated data is "oauth-relay client registration" 0x00, the version and each field of
// the RegistrationKey (identity name, issuer, redirect URI, client authentication), each
// length-prefixed, so a record copied onto another identity or made for another issuer, callback
// or client authentication does not open. The key's fields are in the clear (none is a secret) so
// that a reader can tell "a registration for other settings" (valid, not to be used) from damage,
// and so that `--forget-client` finds the registration of an identity that has not resolved.
//
// The plaintext is a list of tagged fields, as in StoreEntry: every member of RegisteredClient,
// secrets included (the record is encrypted). Tag 11, the scope a step-up login made the
// identity's (`learntScope`), is written only when there is one: a record without it reads as
// before, and a relay that predates it refuses a record with it as damaged (and registers anew).

import Crypto
import Endpoints
import OAuth2
import SafeText

public enum ClientRecord {
    public static let formatVersion: UInt8 = 1
    static let magic: [UInt8] = Array("ORRC".utf8)
    static let fixedHeaderByteCount = 4 + 1 + StoreEntry.keyIDByteCount + 4

    /// Why bytes did not read as a registration for this key under these store keys.
    public enum ReadFailure: Error, Equatable, Sendable, CustomStringConvertible {
        /// Not a record of a version this relay reads, or damaged.
        case corrupt(String)
        /// Written with another store key.
        case otherKey
        /// A registration for another issuer, callback or client authentication (or identity).
        case otherRegistration

        public var description: String {
            switch self {
            case .corrupt(let reason): reason
            case .otherKey: "written with another key"
            case .otherRegistration: "a registration for another issuer, callback or client authentication"
            }
        }
    }

    /// The record's bytes, sealed under a fresh nonce (or `nonce`, in tests).
    public static func encode(_ client: RegisteredClient, for registration: RegistrationKey, key: SymmetricKey,
                              nonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        let fields = keyFields(registration)
        let header = magic + [formatVersion] + StoreEntry.keyID(of: key) + lengthPrefix(fields.count) + fields
        let box = try AESGCM.seal(plaintext(of: client), key: key, authenticating: associatedData(registration), nonce: nonce)
        return header + box.combined
    }

    /// The client in `bytes`, if they are a record for `registration` under one of `keys`.
    public static func decode(_ bytes: [UInt8], for registration: RegistrationKey,
                              keys: StoreKeyRing) throws(ReadFailure) -> RegisteredClient {
        let (found, client) = try decode(bytes, identity: registration.identity, keys: keys)
        guard found == registration else { throw .otherRegistration }
        return client
    }

    /// The registration key and client in `bytes`, if they are a record of `identity` under one of `keys`.
    public static func decode(_ bytes: [UInt8], identity: String,
                              keys: StoreKeyRing) throws(ReadFailure) -> (RegistrationKey, RegisteredClient) {
        guard bytes.count >= fixedHeaderByteCount else { throw .corrupt("shorter than a registration record's header") }
        guard Array(bytes.prefix(4)) == magic else { throw .corrupt("not a registration record") }
        guard bytes[4] == formatVersion else { throw .corrupt("registration record format version \(bytes[4]) is not 1") }
        guard let key = keys.key(withID: Array(bytes[5..<(5 + StoreEntry.keyIDByteCount)])) else { throw .otherKey }
        let count = bytes[(fixedHeaderByteCount - 4)..<fixedHeaderByteCount].reduce(0) { $0 << 8 | Int($1) }
        guard bytes.count - fixedHeaderByteCount >= count else { throw .corrupt("truncated") }
        let headerByteCount = fixedHeaderByteCount + count
        guard let registration = registrationKey(from: Array(bytes[fixedHeaderByteCount..<headerByteCount])) else {
            throw .corrupt("its registration key does not read")
        }
        guard registration.identity == identity else { throw .otherRegistration }
        let box: AESGCM.SealedBox
        do {
            box = try AESGCM.SealedBox(combined: Array(bytes[headerByteCount...]))
        } catch {
            throw .corrupt("truncated")
        }
        let plaintext: [UInt8]
        do {
            plaintext = try AESGCM.open(box, key: key, authenticating: associatedData(registration))
        } catch {
            throw .corrupt("does not decrypt (damaged, or not this identity's registration)")
        }
        guard let client = client(from: plaintext) else { throw .corrupt("decrypts to no registration") }
        return (registration, client)
    }

    /// The fields of `registration`, each length-prefixed (4 bytes, big-endian); an absent
    /// redirect URI is a length of 0xffffffff, so it differs from an empty one.
    static func keyFields(_ registration: RegistrationKey) -> [UInt8] {
        var bytes: [UInt8] = []
        func append(_ text: String?) {
            guard let text else { return bytes += [0xff, 0xff, 0xff, 0xff] }
            bytes += lengthPrefix(text.utf8.count) + Array(text.utf8)
        }
        append(registration.identity)
        append(registration.issuer)
        append(registration.redirectUri)
        append(registration.clientAuth.rawValue)
        return bytes
    }

    /// The key fields and associated data of `registration`'s records, for tests that seal their own plaintexts.
    public static func keyFieldsForTesting(_ registration: RegistrationKey) -> [UInt8] { keyFields(registration) }
    public static func associatedDataForTesting(_ registration: RegistrationKey) -> [UInt8] { associatedData(registration) }

    /// The key `keyFields` wrote; nil unless `bytes` are exactly that.
    static func registrationKey(from bytes: [UInt8]) -> RegistrationKey? {
        var offset = 0
        func next() -> String?? {
            guard bytes.count - offset >= 4 else { return nil }
            let prefix = bytes[offset..<(offset + 4)]
            offset += 4
            if prefix.allSatisfy({ $0 == 0xff }) { return .some(nil) }
            let count = prefix.reduce(0) { $0 << 8 | Int($1) }
            guard bytes.count - offset >= count, let text = String(validating: bytes[offset..<(offset + count)], as: UTF8.self) else {
                return nil
            }
            offset += count
            return .some(text)
        }
        guard let identity = next(), let identity, let issuer = next(), let issuer, let redirectUri = next(),
              let method = next(), let method, let clientAuth = AutoClientAuth(rawValue: method), offset == bytes.count else { return nil }
        return RegistrationKey(identity: identity, issuer: issuer, redirectUri: redirectUri, clientAuth: clientAuth)
    }

    static func associatedData(_ registration: RegistrationKey) -> [UInt8] {
        Array("oauth-relay client registration".utf8) + [0, formatVersion] + keyFields(registration)
    }

    private static func lengthPrefix(_ count: Int) -> [UInt8] {
        let count = UInt32(clamping: count)
        return [UInt8(count >> 24 & 0xff), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
    }

    // MARK: - Plaintext

    /// Plaintext fields, each written as tag, 4-byte big-endian length, bytes; tags strictly
    /// increasing (what decodes encodes to the same bytes).
    enum Tag: UInt8 {
        case issuer = 1, clientId, clientSecret, clientSecretExpiresAt, registrationAccessToken, registrationClientUri,
             tokenEndpointAuthMethod, privateKeyPEM, redirectUri, registeredAt, learntScope
    }

    static func plaintext(of client: RegisteredClient) -> [UInt8] {
        var fields = TaggedFields()
        func append(_ tag: Tag, _ value: [UInt8]) { fields.append(tag.rawValue, value) }
        func append(_ tag: Tag, time: Double) { fields.append(tag.rawValue, time: time) }
        append(.issuer, Array(client.issuer.utf8))
        append(.clientId, Array(client.clientId.utf8))
        if let secret = client.clientSecret { append(.clientSecret, Array(secret.value.utf8)) }
        if let expiresAt = client.clientSecretExpiresAt { append(.clientSecretExpiresAt, time: expiresAt) }
        if let token = client.registrationAccessToken { append(.registrationAccessToken, Array(token.value.utf8)) }
        if let uri = client.registrationClientUri { append(.registrationClientUri, Array(uri.description.utf8)) }
        append(.tokenEndpointAuthMethod, Array(client.tokenEndpointAuthMethod.utf8))
        if let pem = client.privateKeyPEM { append(.privateKeyPEM, Array(pem.value.utf8)) }
        if let redirectUri = client.redirectUri { append(.redirectUri, Array(redirectUri.utf8)) }
        append(.registeredAt, time: client.registeredAt)
        if let scope = client.learntScope { append(.learntScope, Array(scope.utf8)) }
        return fields.bytes
    }

    /// The client in a decrypted plaintext; nil unless it is exactly what `plaintext(of:)` writes.
    static func client(from plaintext: [UInt8]) -> RegisteredClient? {
        guard let fields = TaggedFields.read(plaintext, isKnown: { Tag(rawValue: $0) != nil }) else { return nil }
        func text(_ tag: Tag) -> String?? { TaggedFields.text(fields[tag.rawValue]) }
        func time(_ tag: Tag) -> Double?? { TaggedFields.time(fields[tag.rawValue]) }
        guard let issuer = text(.issuer), let issuer, let clientId = text(.clientId), let clientId,
              let secret = text(.clientSecret), let expiresAt = time(.clientSecretExpiresAt),
              let accessToken = text(.registrationAccessToken), let uriText = text(.registrationClientUri),
              let method = text(.tokenEndpointAuthMethod), let method, let pem = text(.privateKeyPEM),
              let redirectUri = text(.redirectUri), let registeredAt = time(.registeredAt), let registeredAt,
              let learntScope = text(.learntScope) else { return nil }
        var uri: HTTPURL?
        if let uriText {
            guard let parsed = try? HTTPURL(absolute: uriText) else { return nil }
            uri = parsed
        }
        return RegisteredClient(issuer: issuer, clientId: clientId, clientSecret: secret.map(Secret.init), clientSecretExpiresAt: expiresAt,
                                registrationAccessToken: accessToken.map(Secret.init), registrationClientUri: uri,
                                tokenEndpointAuthMethod: method, privateKeyPEM: pem.map(Secret.init), redirectUri: redirectUri,
                                registeredAt: registeredAt, learntScope: learntScope)
    }
}
