// The name of one caller's entry in the shared store (a per-caller identity: `subjectTokenFrom:
// "caller"`), derived so that Redis never sees the caller's token, nor a plain digest of it: a
// SHA-256 of the token would let anyone who reads Redis check a candidate token against the key
// names, so the name is a keyed MAC, and only holders of the store key can compute it.
//
//   subkey = HMAC-SHA256(store key, "oauth-relay caller entry name v1")
//   name   = HMAC-SHA256(subkey, "identity" ‖ name, "settings" ‖ fingerprint,
//                                "generation" ‖ generation, "caller" ‖ caller token
//                                [, "actor" ‖ the identity's actor token, when it sends one])
//
// each part length-prefixed, so no two inputs encode alike. The subkey keeps these MACs apart from
// every other use of the store key (AES-256-GCM of the entries, the entries' key id).
//
// - The identity's name and settings fingerprint: another identity, or the same one with other
//   settings (another client, audience, scope), never reads a caller's token meant for it.
// - The actor token (a secret, so not in the fingerprint, which is stored in the clear): another
//   actor never reads a token issued with this one. Without one the name is as before.
// - The generation: a random value per identity in Redis (SharedCallerEntries.swift), replaced by
//   a logout, so that every caller entry written before it becomes unreachable at once — per-caller
//   entries cannot be listed in a Redis Cluster without a SCAN of every node — and expires by TTL.
// - The store key in force: every replica with the same key derives the same name, whenever it
//   started. A rotated store key (`store.keyFile`) derives other names, so the entries written
//   under the old key are no longer found: their callers' tokens are exchanged again once per
//   caller for the fleet, and the old entries expire with their tokens. (Deriving from the oldest
//   key instead would not do: a replica started after the rotation knows the new key alone.)

import Crypto
import SafeText
import TokenStore

/// One caller's entry name: 32 bytes, the key's hex digits in Redis. Pure, no I/O.
struct CallerEntryName: Equatable {
    static let byteCount = HMACSHA256.byteCount
    let bytes: [UInt8]

    /// What the store key is used for here, and nowhere else.
    static let subkeyLabel = Array("oauth-relay caller entry name v1".utf8)

    /// The MAC the name is made with: HMAC-SHA256 (a parameter for tests).
    typealias MAC = ([UInt8], SymmetricKey) throws -> [UInt8]

    /// The name of `caller`'s entry for `identity` with `fingerprint` and the identity's callers'
    /// `generation`, under `storeKey` (and the identity's `actor` token, if any); nil when a MAC fails (the store key is never empty, so only
    /// when OpenSSL cannot allocate): the exchange then runs without the shared store. Never a
    /// constant name, which would be every caller's and hand one caller's token to another.
    init?(storeKey: SymmetricKey, identity: String, fingerprint: SettingsFingerprint, generation: String, caller: Secret,
          actor: Secret? = nil, mac: MAC = { try HMACSHA256.authenticationCode(for: $0, key: $1) }) {
        var message: [UInt8] = []
        for (label, value) in [("identity", Array(identity.utf8)), ("settings", fingerprint.bytes), ("generation", Array(generation.utf8)),
                               ("caller", Array(caller.value.utf8))] + (actor.map { [("actor", Array($0.value.utf8))] } ?? []) {
            Self.append(Array(label.utf8), to: &message)
            Self.append(value, to: &message)
        }
        guard let subkey = try? mac(Self.subkeyLabel, storeKey), subkey.count == Self.byteCount,
              let name = try? mac(message, SymmetricKey(subkey)), name.count == Self.byteCount
        else { return nil }
        bytes = name
    }

    /// The name in lower-case hex: 64 digits.
    var hex: [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        return bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xf)]] }
    }

    /// What the entry's header carries in the fingerprint's place and its associated data binds
    /// (StoreEntry): an entry copied under another caller's name does not open.
    var entryFingerprint: SettingsFingerprint {
        SettingsFingerprint(bytes: bytes)
    }

    private static func append(_ bytes: [UInt8], to message: inout [UInt8]) {
        let count = UInt32(bytes.count)
        message += [UInt8(count >> 24 & 0xff), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        message += bytes
    }
}
