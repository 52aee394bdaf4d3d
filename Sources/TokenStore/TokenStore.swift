// TokenStore: encrypted, crash-safe persistence of each identity's tokens in one directory,
// shared by every relay process and `oauth-relay token` on the machine.
//
// Files (names from the identity, which Config restricts to letters, digits, ".", "_", "-"):
//   identity-NAME.token          the entry (StoreEntry.swift), 0600, replaced atomically
//   identity-NAME.lock           the entry's flock (EntryLock.swift), 0600, never removed
//   .identity-NAME.token.tmp-…   a write in progress; ignored by readers (a leftover of a killed
//                                process is harmless and removed by the next write of that entry)
//   identity-NAME.token.corrupt-TIME   an entry that did not open, moved aside once
//   client-NAME.registration     an `auto` identity's registered client (TokenStore+Clients.swift)
//
// Protocol for a fetch (driven by the token thread, Tokens/FileLockedFetch.swift): take the
// entry's lock, read the entry, fetch only if it is still not good enough, write, release. So
// N processes refreshing at once make one token request, and a rotated refresh token is never
// lost. Reading and writing need no lock of their own: a write is an atomic rename.
//
// No method here logs: the caller decides what to tell (a moved-aside entry is one warning),
// and no error or description carries a token or the key.

import Crypto
import FoundationEssentials
import HTTPFields
import OAuth2
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What reading an identity's entry found.
public enum StoreRead: Sendable, Equatable {
    /// No entry (or only one being written).
    case empty
    case found(StoredToken)
    /// An entry for other settings of the identity (another client, scope, …): not used, and
    /// replaced by the next write.
    case otherSettings
    /// An entry under a key this process does not hold: another process on the machine already
    /// took up a rotated key file this one has not seen yet, or a stray file. Not used, left in
    /// place (it is no damage), replaced by the next write.
    case otherKey
    /// The entry did not open; it was renamed to `movedTo` and the identity starts empty.
    case movedAside(reason: String, movedTo: String)
}

/// What `TokenStore.reseal` did, by identity name.
public struct StoreResealing: Sendable, Equatable {
    /// Entries now under the key in force.
    public var resealed: [String] = []
    /// Entries locked by a fetch under way (its write uses the key in force, or, in another
    /// process, that process's next rotation re-seals it).
    public var busy: [String] = []
    /// Entries under no key this process holds, or damaged: left as they are (read them, and a
    /// damaged one is moved aside then).
    public var unreadable: [String] = []

    public init() {}
}

public final class TokenStore: Sendable {
    /// The directory.
    public let path: String
    /// The key in force and those it replaced since the process started.
    public let keys: StoreKeys

    /// Opens the store in `path`, creating the directory (0700) if needed. Throws when the
    /// directory is unsafe, and `wrongKey` when its entries were all written with another key.
    public convenience init(path: String, key: SymmetricKey) throws(StoreError) {
        try self.init(path: path, keys: StoreKeys(key))
    }

    /// Opens the store with `keys` (shared with the Redis store and the reload, which rotates them).
    public init(path: String, keys: StoreKeys) throws(StoreError) {
        let ring = keys.snapshot
        for key in ring.all where key.byteCount != AESGCM.keyByteCount { throw .invalidKey("it is \(key.byteCount) bytes, not 32") }
        self.path = path
        self.keys = keys
        try StoreDirectory.prepare(path)
        try Self.verifyKey(ring.all, in: path)
    }

    /// The key from its base64 text (`store.key`, or a key file's content, trimmed).
    public static func key(base64 text: String) throws(StoreError) -> SymmetricKey {
        let trimmed = String(WhiteSpace.trimmingSpacesAndNewlines(text))
        guard let bytes = Data(base64Encoded: trimmed).map(Array.init) else { throw .invalidKey("not base64 (create one with `openssl rand -base64 32`)") }
        guard bytes.count == AESGCM.keyByteCount else {
            throw .invalidKey("it decodes to \(bytes.count) bytes, not 32 (create one with `openssl rand -base64 32`)")
        }
        return SymmetricKey(bytes)
    }

    /// Checks a store the way opening it would, without creating or changing anything (for
    /// `check` and reloads): the directory's ownership and mode, and that its entries were written
    /// with `key`, or one of `previousKeys` (a reload's: the keys the running relay still reads
    /// with). A missing directory is fine when its parent exists (it is created at start).
    public static func check(path: String, key: SymmetricKey, previousKeys: [SymmetricKey] = []) throws(StoreError) {
        guard key.byteCount == AESGCM.keyByteCount else { throw .invalidKey("it is \(key.byteCount) bytes, not 32") }
        var info = stat()
        guard stat(path, &info) == 0 else {
            // Created at start, with any missing parent: the nearest existing one must be a directory.
            var ancestor = StoreDirectory.parentOf(path)
            while stat(ancestor, &info) != 0 && ancestor != StoreDirectory.parentOf(ancestor) { ancestor = StoreDirectory.parentOf(ancestor) }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw .unsafeDirectory(path: path, reason: "it cannot be created under \(ancestor), which is not a directory")
            }
            return
        }
        try StoreDirectory.check(path)
        try verifyKey([key] + previousKeys, in: path)
    }

    // MARK: - Entries

    public func read(identity: String, fingerprint: SettingsFingerprint) throws(StoreError) -> StoreRead {
        let file = try entryPath(identity)
        guard let bytes = try StoreDirectory.contents(file) else { return .empty }
        do throws(StoreEntry.ReadFailure) {
            return .found(try StoreEntry.decode(bytes, identity: identity, fingerprint: fingerprint, keys: keys.snapshot))
        } catch .otherSettings {
            return .otherSettings
        } catch .otherKey {
            return .otherKey
        } catch {
            guard let movedTo = try moveAside(file) else { return .empty }
            return .movedAside(reason: error.description, movedTo: movedTo)
        }
    }

    /// Renames a file that did not open to `FILE.corrupt-TIME`, once: returns that name, or nil
    /// when the file is gone already (another process moved or replaced it).
    func moveAside(_ file: String) throws(StoreError) -> String? {
        let movedTo = file + ".corrupt-" + timestamp()
        guard rename(file, movedTo) == 0 else {
            if errno == ENOENT { return nil }
            throw .io(path: file, operation: "rename", reason: errnoText())
        }
        return movedTo
    }

    /// Replaces the identity's entry with `token` (removes it when `token` holds nothing).
    public func write(_ token: StoredToken, identity: String, fingerprint: SettingsFingerprint) throws(StoreError) {
        guard !token.isEmpty else { return try removeHoldingLock(identity: identity) }
        let file = try entryPath(identity)
        let bytes: [UInt8]
        do {
            bytes = try StoreEntry.encode(token, identity: identity, fingerprint: fingerprint, key: keys.current)
        } catch {
            throw .io(path: file, operation: "encrypt", reason: error.description)
        }
        let temporary = ".identity-\(identity).token.tmp-\(getpid())-\(timestamp())"
        try StoreDirectory.replace(file, with: bytes, temporaryName: temporary)
        removeLeftovers(prefix: ".identity-\(identity).token.tmp-", except: temporary)
    }

    /// Removes the identity's entry (`DELETE /identities/NAME/token`, logout) under its lock,
    /// waiting for it at most `lockTimeout` seconds: a `reseal` (or another process's write) under
    /// way finishes first, and cannot put the entry back afterwards. When the lock stays held
    /// that long, throws `lockTimedOut` and the entry stays (the caller reports the removal failed).
    public func remove(identity: String, lockTimeout: Double) throws(StoreError) {
        let lock = try lock(identity: identity, timeout: lockTimeout)
        defer { lock.release() }
        try removeHoldingLock(identity: identity)
    }

    /// Removes the identity's entry, for a caller that holds its lock (a fetch under way).
    public func removeHoldingLock(identity: String) throws(StoreError) {
        let file = try entryPath(identity)
        guard unlink(file) == 0 || errno == ENOENT else { throw .io(path: file, operation: "unlink", reason: errnoText()) }
        try StoreDirectory.syncDirectory(path)
    }

    /// Seals every entry of the directory written under a previous key (`keys.previous`) again
    /// under the key in force, each under its lock, taken without waiting: after a rotation, so
    /// that a restart with the new key alone still reads them. Entries already under the key in
    /// force are left alone; so are entries whose lock is held (`busy`), and entries no key opens.
    public func reseal() throws(StoreError) -> StoreResealing {
        var outcome = StoreResealing()
        let prefix = "identity-", suffix = ".token"
        for name in try StoreDirectory.fileNames(path) where name.hasPrefix(prefix) && name.hasSuffix(suffix) {
            let identity = String(name.dropFirst(prefix.count).dropLast(suffix.count))
            let taken: EntryLock?
            do {
                taken = try tryLock(identity: identity)
            } catch {
                // A name no identity can have: a stray file.
                outcome.unreadable.append(identity)
                continue
            }
            guard let lock = taken else {
                outcome.busy.append(identity)
                continue
            }
            defer { lock.release() }
            let file = try entryPath(identity)
            guard let bytes = try StoreDirectory.contents(file) else { continue }
            let sealed: [UInt8]?
            do throws(StoreEntry.ReadFailure) {
                sealed = try StoreEntry.resealed(bytes, identity: identity, keys: keys.snapshot)
            } catch {
                outcome.unreadable.append(identity)
                continue
            }
            guard let sealed else { continue }
            let temporary = ".identity-\(identity).token.tmp-\(getpid())-\(timestamp())"
            try StoreDirectory.replace(file, with: sealed, temporaryName: temporary)
            outcome.resealed.append(identity)
        }
        return outcome
    }

    // MARK: - Locks

    /// The identity's lock if free now, else nil (never blocks).
    public func tryLock(identity: String) throws(StoreError) -> EntryLock? {
        try EntryLock.tryAcquire(path: lockPath(identity))
    }

    /// The identity's lock, waiting at most `timeout` seconds (for callers with nothing else to do).
    public func lock(identity: String, timeout: Double) throws(StoreError) -> EntryLock {
        try EntryLock.acquire(path: lockPath(identity), timeout: timeout)
    }

    // MARK: - Files

    func entryPath(_ identity: String) throws(StoreError) -> String {
        try Self.checkName(identity)
        return path + "/identity-\(identity).token"
    }

    func lockPath(_ identity: String) throws(StoreError) -> String {
        try Self.checkName(identity)
        return path + "/identity-\(identity).lock"
    }

    static func checkName(_ name: String) throws(StoreError) {
        let allowed = !name.isEmpty && name.utf8.count <= 200 && name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) || $0 == 0x2e || $0 == 0x5f || $0 == 0x2d
        }
        guard allowed else { throw .invalidName(name) }
    }

    /// Refuses keys that open none of the entries present while another key wrote them: a
    /// wrong key is a clear start-up error, not every entry ignored.
    private static func verifyKey(_ keys: [SymmetricKey], in path: String) throws(StoreError) {
        let ours = keys.map(StoreEntry.keyID(of:))
        var foreign = false
        for name in try StoreDirectory.fileNames(path) where name.hasPrefix("identity-") && name.hasSuffix(".token") {
            guard let bytes = try? StoreDirectory.contents(path + "/" + name), let id = StoreEntry.keyID(inEntry: bytes) else { continue }
            if ours.contains(id) { return }
            foreign = true
        }
        if foreign { throw .wrongKey(path: path) }
    }

    /// Temporary files of one entry or record (their names start with `prefix`) that a killed
    /// writer left behind. Best effort: an entry's runs under its lock in the relay, and a record
    /// is written once per registration, so no other writer of it is under way.
    func removeLeftovers(prefix: String, except current: String) {
        guard let names = try? StoreDirectory.fileNames(path) else { return }
        for name in names where name.hasPrefix(prefix) && name != current { unlink(path + "/" + name) }
    }

    func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return "\(now.tv_sec)\(String(now.tv_nsec / 1_000_000 + 1000).dropFirst())"
    }
}
