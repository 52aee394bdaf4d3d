// WatchedFiles: telling that a file the configuration names was replaced, with no timer here.
//
// A credential on disk rotates in one of three ways, and each must be seen:
// - Kubernetes Secret and projected volumes (kubelet's AtomicWriter): `tls.crt` is a symlink to
//   `..data/tls.crt`, and `..data` is a symlink to a timestamped directory that is swapped in one
//   rename. The path never changes; the file it resolves to does (another inode, another target).
// - cert-manager's and most tools' in-place rewrite: the same inode, a new modification time and,
//   usually, a new size.
// - delete, then create: for a moment there is no file (`FileIdentity.observe` says nil), then a
//   file with another inode.
// `FileIdentity` is what `stat(2)` and `realpath(3)` say of a path, compared as a whole;
// `WatchedFileChanges` decides, with no I/O, which of the configuration's files changed between
// two observations. The timer that observes is the caller's (the relay's main loop).

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What identifies the content a path leads to, without reading it: the device and inode of the
/// file it resolves to, its modification time in nanoseconds and its size, and the path it
/// resolves to through every symlink. Two observations are equal only if none of these moved, so
/// a symlink swap, an in-place rewrite and a delete-then-create all make a different identity.
public struct FileIdentity: Sendable, Hashable, CustomStringConvertible {
    public var device: UInt64
    public var inode: UInt64
    /// Nanoseconds since the Unix epoch.
    public var modificationNanoseconds: Int64
    public var size: Int64
    /// The path with every symlink resolved (`realpath`): where a Kubernetes `..data` swap shows.
    public var resolvedPath: String

    public init(device: UInt64, inode: UInt64, modificationNanoseconds: Int64, size: Int64, resolvedPath: String) {
        self.device = device
        self.inode = inode
        self.modificationNanoseconds = modificationNanoseconds
        self.size = size
        self.resolvedPath = resolvedPath
    }

    /// The identity of the file `path` leads to now (following symlinks), or nil when there is
    /// none: no such file, a dangling symlink, a directory on the way that cannot be searched,
    /// something that is not a regular file.
    public static func observe(path: String) -> FileIdentity? {
        try? current(of: path).get()
    }

    /// The file `path` leads to now (following symlinks), or why there is none to read.
    public static func current(of path: String) -> Result<FileIdentity, FileUnavailable> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(FileUnavailable(errno: errno)) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .failure(.notAFile) }
        guard let resolved = realpath(path, nil) else { return .failure(FileUnavailable(errno: errno)) }
        defer { free(resolved) }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        return .success(FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
                                     modificationNanoseconds: Int64(modified.tv_sec) * 1_000_000_000 + Int64(modified.tv_nsec),
                                     size: Int64(info.st_size), resolvedPath: String(cString: resolved)))
    }

    /// The largest credential, key, certificate bundle or secret file the relay reads: the
    /// configuration at load and the token thread when a file rotates refuse the same sizes.
    public static let credentialSizeLimit = 1024 * 1024

    /// The file's bytes, read from its resolved path; at most `limit` bytes. What is opened must
    /// still be this file (its device and inode): a FIFO or device put there since would block
    /// the reading thread, so it is opened without waiting and refused.
    public func contents(limit: Int) -> Result<[UInt8], FileUnavailable> {
        let descriptor = open(resolvedPath, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { return .failure(FileUnavailable(errno: errno)) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return .failure(FileUnavailable(errno: errno)) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .failure(.notAFile) }
        guard UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode else { return .failure(.replaced) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(FileUnavailable(errno: errno))
            }
            if count == 0 { return .success(bytes) }
            bytes += chunk[0..<count]
            if bytes.count > limit { return .failure(.tooLarge(limit: limit)) }
        }
    }

    /// For debugging and tests: metadata only (a path, numbers), never content.
    public var description: String {
        "\(resolvedPath) (device \(device), inode \(inode), \(size) bytes, modified \(modificationNanoseconds) ns)"
    }
}

/// Why a file cannot be read now. Its description names no path (the caller does).
public enum FileUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    case missing
    case notAFile
    /// Another file took its place between the look and the read (read it at the next look).
    case replaced
    case tooLarge(limit: Int)
    /// Any other failure, with the system's words for it (`Permission denied`).
    case failed(String)

    public init(errno code: Int32) {
        self = code == ENOENT || code == ENOTDIR ? .missing : .failed(String(cString: strerror(code)))
    }

    public var description: String {
        switch self {
        case .missing: "no such file"
        case .notAFile: "not a regular file"
        case .replaced: "replaced while it was being read"
        case .tooLarge(let limit): "larger than \(limit) bytes"
        case .failed(let reason): reason
        }
    }
}
