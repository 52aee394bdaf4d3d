// KeptClients: the registrations kept in a store directory, read without changing anything
// there — for `oauth-relay check --resolve`, which leaves the disk as it found it: no directory
// made, no key file written, a record that does not open left in place (TokenStore.readClient
// renames it aside; this only says so).

import Crypto
import OAuth2

public struct KeptClients: Sendable {
    /// The store directory.
    public let path: String
    private let keys: StoreKeyRing

    /// The store at `path` with `key`; nil when the directory does not exist (nothing is kept).
    public init?(path: String, key: SymmetricKey) {
        guard (try? StoreDirectory.fileNames(path)) != nil else { return nil }
        self.path = path
        keys = StoreKeyRing(key)
    }

    /// The default store under `directory` (DefaultStore.swift), when it and its key exist.
    public init?(defaultStoreIn directory: String) {
        guard let key = try? DefaultStore.existingKey(in: directory) else { return nil }
        self.init(path: directory + "/tokens", key: key)
    }

    /// The registration kept for `key`: nil when none is (or one for another issuer, callback,
    /// client authentication or store key); throws, naming the file, when the record does not
    /// open.
    public func read(_ key: RegistrationKey) throws(StoreError) -> RegisteredClient? {
        let file = try TokenStore.clientPath(key.identity, in: path)
        guard let bytes = try StoreDirectory.contents(file) else { return nil }
        do throws(ClientRecord.ReadFailure) {
            return try ClientRecord.decode(bytes, for: key, keys: keys)
        } catch .otherRegistration, .otherKey {
            return nil
        } catch {
            throw .io(path: file, operation: "read", reason: error.description)
        }
    }
}
