/// Why the token store refused something. The words name the store's directory or the entry's
/// file and what is wrong with it, never a token or the key: these errors reach logs and
/// `oauth-relay check`.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key is not 32 bytes (after base64 decoding).
    case invalidKey(String)
    /// The directory cannot be used: missing and not creatable, not a directory, owned by another
    /// user, or writable by others (anyone who can write there can replace entries and locks).
    case unsafeDirectory(path: String, reason: String)
    /// Entries in the directory were written with another key: the relay was given the wrong one.
    case wrongKey(path: String)
    /// An identity name the store cannot use as a file name.
    case invalidName(String)
    /// A system call on the store failed (`operation` and `errno`'s text).
    case io(path: String, operation: String, reason: String)
    /// The entry stayed locked by another process for the whole wait.
    case lockTimedOut(path: String, seconds: Double)

    public var description: String {
        switch self {
        case .invalidKey(let reason): "the token store key is unusable: \(reason)"
        case .unsafeDirectory(let path, let reason): "the token store directory \(path) cannot be used: \(reason)"
        case .wrongKey(let path):
            "the token store \(path) was written with another key (wrong store.key or store.keyFile); "
                + "give the key it was written with, or move its entries away"
        case .invalidName(let name): "\"\(name)\" cannot name a token store entry"
        case .io(let path, let operation, let reason): "token store: \(operation) \(path) failed: \(reason)"
        case .lockTimedOut(let path, let seconds):
            "token store: \(path) stayed locked by another process for \(Int(seconds.rounded())) s"
        }
    }
}
