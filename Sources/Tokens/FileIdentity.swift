#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which version of a file a path names, known without reading it: the file's device, inode,
/// modification time (to the nanosecond) and size, and the path with every symbolic link
/// resolved. Any rotation changes it: Kubernetes' atomic swap of `..data` (a new directory, so a
/// new inode and a new resolved path), an in-place rewrite (a new mtime, usually a new size),
/// a delete-then-create (a new inode). Two equal values are taken for the same content.
struct FileIdentity: Sendable, Equatable {
    var device: UInt64
    var inode: UInt64
    var modifiedSeconds: Int64
    var modifiedNanoseconds: Int64
    var size: Int64
    /// The path with its symbolic links resolved (`realpath`).
    var target: String

    /// The file `path` names now (links followed), or why there is none to read.
    static func current(of path: String) -> Result<FileIdentity, FileUnavailable> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(FileUnavailable(errno: errno)) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .failure(.notAFile) }
        guard let resolved = realpath(path, nil) else { return .failure(FileUnavailable(errno: errno)) }
        defer { free(resolved) }
        return .success(FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
                                     modifiedSeconds: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: Int64(info.st_mtim.tv_nsec),
                                     size: Int64(info.st_size), target: String(cString: resolved)))
    }

    /// The file's bytes, read from its resolved path; at most `limit` bytes.
    func contents(limit: Int) -> Result<[UInt8], FileUnavailable> {
        let descriptor = open(target, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(FileUnavailable(errno: errno)) }
        defer { close(descriptor) }
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
}

/// Why a file cannot be read now. Its description names no path (the caller does).
enum FileUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    case missing
    case notAFile
    case tooLarge(limit: Int)
    /// Any other failure, with the system's words for it (`Permission denied`).
    case failed(String)

    init(errno code: Int32) {
        self = code == ENOENT || code == ENOTDIR ? .missing : .failed(String(cString: strerror(code)))
    }

    var description: String {
        switch self {
        case .missing: "no such file"
        case .notAFile: "not a regular file"
        case .tooLarge(let limit): "larger than \(limit) bytes"
        case .failed(let reason): reason
        }
    }
}
