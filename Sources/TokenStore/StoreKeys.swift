import Crypto
import Locking

/// The token store's keys (`store.key` / `store.keyFile`) within one process: the key in force,
/// which every entry is written with, and the keys it replaced while the process ran, newest
/// first, which still read the entries written with them. So a key file rotated under a running
/// relay takes effect without a restart: entries under the previous key open until they are
/// written again (TokenStore re-seals the directory's at once, `TokenStore.reseal`), and Redis
/// entries, which expire with their tokens, are replaced by the next token obtained.
///
/// A value: `StoreKeys` shares one between the file store, the Redis store and the reload.
public struct StoreKeyRing: Sendable, Equatable {
    /// At most this many replaced keys are kept: a rotation every few seconds cannot grow memory.
    public static let previousKeptAtMost = 4

    public private(set) var current: SymmetricKey
    /// Newest first.
    public private(set) var previous: [SymmetricKey] = []

    public init(_ current: SymmetricKey) {
        self.current = current
    }

    /// Puts `key` in force; the key it replaces reads on. False (nothing changes) when `key` is
    /// the one in force; a previous key made current again leaves the previous list.
    public mutating func rotate(to key: SymmetricKey) -> Bool {
        guard key != current else { return false }
        previous.removeAll { $0 == key }
        previous.insert(current, at: 0)
        if previous.count > Self.previousKeptAtMost { previous.removeLast(previous.count - Self.previousKeptAtMost) }
        current = key
        return true
    }

    /// Every key, the one in force first.
    public var all: [SymmetricKey] { [current] + previous }

    /// The key whose id (`StoreEntry.keyID(of:)`) is `id`, if this ring holds it.
    public func key(withID id: [UInt8]) -> SymmetricKey? {
        all.first { ConstantTime.equal(StoreEntry.keyID(of: $0), id) }
    }
}

/// One `StoreKeyRing` shared by the threads that read and write entries (the token thread) and
/// the one that rotates it (the main thread's reload).
public final class StoreKeys: Sendable {
    private let ring: Locked<StoreKeyRing>

    public init(_ key: SymmetricKey) {
        ring = Locked(StoreKeyRing(key))
    }

    /// The keys now.
    public var snapshot: StoreKeyRing { ring.withLock { $0 } }

    /// The key entries are written with now.
    public var current: SymmetricKey { ring.withLock { $0.current } }

    /// Puts `key` in force (see `StoreKeyRing.rotate`); false when it already was.
    @discardableResult
    public func rotate(to key: SymmetricKey) -> Bool {
        ring.withLock { $0.rotate(to: key) }
    }
}
