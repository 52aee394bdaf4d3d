#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import FoundationEssentials

/// The store a developer gets without configuring one, for identities a person logs in to (a
/// login should survive a restart): `$XDG_STATE_HOME/oauth-relay` (else
/// `~/.local/state/oauth-relay`), with the entries in `tokens/` and a key generated on first use
/// in `store.key` (0600, 32 random bytes, base64). A key file that others may read, or that
/// another user owns, is refused like an unsafe directory.
public enum DefaultStore {
    /// The default store's directory for `environment`; nil without `XDG_STATE_HOME` or `HOME`.
    public static func directory(environment: [String: String]) -> String? {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/oauth-relay" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/state/oauth-relay"
    }

    /// Opens (creating on first use) the default store under `directory`.
    public static func store(in directory: String) throws(StoreError) -> TokenStore {
        try StoreDirectory.prepare(directory)
        let keyPath = directory + "/store.key"
        let key: SymmetricKey
        if let existing = try readKey(keyPath) { key = existing } else { key = try createKey(keyPath) }
        return try TokenStore(path: directory + "/tokens", key: key)
    }

    /// The key of the default store under `directory`, when one was made (nothing is created).
    static func existingKey(in directory: String) throws(StoreError) -> SymmetricKey? {
        try readKey(directory + "/store.key")
    }

    private static func readKey(_ path: String) throws(StoreError) -> SymmetricKey? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw .unsafeDirectory(path: path, reason: errnoText())
        }
        guard info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw .invalidKey("the key file \(path) must belong to this user and be readable by no one else (chmod 600)")
        }
        guard let bytes = try StoreDirectory.contents(path) else { return nil }
        return try TokenStore.key(base64: String(decoding: bytes, as: UTF8.self))
    }

    /// A new key, written with O_EXCL: two processes starting at once cannot both make one.
    private static func createKey(_ path: String) throws(StoreError) -> SymmetricKey {
        var random = SecureRandomNumberGenerator()
        let bytes = (0..<AESGCM.keyByteCount).map { _ in UInt8.random(in: .min ... .max, using: &random) }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            // Another process made it first: use theirs.
            if errno == EEXIST, let key = try readKey(path) { return key }
            throw .unsafeDirectory(path: path, reason: errnoText())
        }
        defer { close(descriptor) }
        let text = Array((Data(bytes).base64EncodedString() + "\n").utf8)
        guard text.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == text.count, fsync(descriptor) == 0 else {
            throw .unsafeDirectory(path: path, reason: errnoText())
        }
        return SymmetricKey(bytes)
    }
}
