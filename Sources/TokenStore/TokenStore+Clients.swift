// The registered clients of `auto` identities in the token store's directory, one file each:
//
//   client-NAME.registration            the record (ClientRecord.swift), 0600, replaced atomically
//   .client-NAME.registration.tmp-…     a write in progress
//   client-NAME.registration.corrupt-TIME   a record that did not open, moved aside once
//
// No lock: a registration is written once per identity and issuer (a second process that
// registers meanwhile replaces it with its own, which is as good), and every write is an atomic
// rename.

import Crypto
import OAuth2
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What reading an identity's kept registration found.
public enum StoredClientRead: Sendable, Equatable {
    /// No record.
    case empty
    case found(RegisteredClient)
    /// A record for another issuer, callback or client authentication: not used, replaced by the
    /// next registration.
    case otherRegistration
    /// A record under a store key this process does not hold: not used, left in place.
    case otherKey
    /// The record did not open; it was renamed to `movedTo`.
    case movedAside(reason: String, movedTo: String)

    /// The client, when one for the key asked was found.
    public var client: RegisteredClient? {
        if case .found(let client) = self { return client }
        return nil
    }
}

extension TokenStore {
    /// The registration kept for `key` (its identity's record, if made for that key).
    public func readClient(_ key: RegistrationKey) throws(StoreError) -> StoredClientRead {
        let file = try clientPath(key.identity)
        guard let bytes = try StoreDirectory.contents(file) else { return .empty }
        do throws(ClientRecord.ReadFailure) {
            return .found(try ClientRecord.decode(bytes, for: key, keys: keys.snapshot))
        } catch .otherRegistration {
            return .otherRegistration
        } catch .otherKey {
            return .otherKey
        } catch {
            guard let movedTo = try moveAside(file) else { return .empty }
            return .movedAside(reason: error.description, movedTo: movedTo)
        }
    }

    /// The registration kept for `identity`, whatever its key (`--forget-client` before the
    /// identity resolved); nil when there is none, or none this process can open.
    public func readClient(identity: String) throws(StoreError) -> (RegistrationKey, RegisteredClient)? {
        guard let bytes = try StoreDirectory.contents(try clientPath(identity)) else { return nil }
        return try? ClientRecord.decode(bytes, identity: identity, keys: keys.snapshot)
    }

    /// Keeps `client` as the registration of `key`'s identity (replacing any other).
    public func writeClient(_ client: RegisteredClient, for key: RegistrationKey) throws(StoreError) {
        let file = try clientPath(key.identity)
        let bytes: [UInt8]
        do {
            bytes = try ClientRecord.encode(client, for: key, key: keys.current)
        } catch {
            throw .io(path: file, operation: "encrypt", reason: error.description)
        }
        let prefix = ".client-\(key.identity).registration.tmp-"
        let temporary = prefix + "\(getpid())-\(timestamp())"
        try StoreDirectory.replace(file, with: bytes, temporaryName: temporary)
        removeLeftovers(prefix: prefix, except: temporary)
    }

    /// Removes the registration kept for `identity` (none kept is no error).
    public func removeClient(identity: String) throws(StoreError) {
        let file = try clientPath(identity)
        guard unlink(file) == 0 || errno == ENOENT else { throw .io(path: file, operation: "unlink", reason: errnoText()) }
        try StoreDirectory.syncDirectory(path)
    }

    /// Removes the registration kept for `identity` only when it is the client `clientId`: a
    /// record another process wrote meanwhile (a client it registered anew), or one this process
    /// cannot open, stays. Returns whether one was removed.
    @discardableResult
    public func removeClient(identity: String, clientId: String) throws(StoreError) -> Bool {
        guard let (_, kept) = try readClient(identity: identity), kept.clientId == clientId else { return false }
        try removeClient(identity: identity)
        return true
    }

    func clientPath(_ identity: String) throws(StoreError) -> String {
        try Self.clientPath(identity, in: path)
    }

    /// Where the registration of `identity` is kept in the store directory `directory`.
    static func clientPath(_ identity: String, in directory: String) throws(StoreError) -> String {
        try checkName(identity)
        return directory + "/client-\(identity).registration"
    }
}
