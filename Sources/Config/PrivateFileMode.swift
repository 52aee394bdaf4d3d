import WatchedFiles
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file that holds passwords (`forward.proxyAuthFile`) must be the owner's alone: group and
/// others get no permission bit at all, as for the default store's key file (`chmod 600`). The
/// mode is the one of the file the path leads to through its symlinks (a Kubernetes Secret's
/// `..data` link), the file the relay reads.
enum PrivateFileMode {
    /// Why such a file is not read.
    enum Refusal: Error, Equatable {
        /// Group or others have access to it: the text says so, with its mode.
        case openToOthers(String)
        /// It cannot be read (missing, not a regular file, too large, a system error).
        case unavailable(FileUnavailable)
    }

    /// The bytes of the file `path` leads to, at most `limit`: opened once (through its
    /// symlinks), its mode checked on that descriptor (`fstat`) and read from it, so that the file
    /// read is the file checked.
    static func contents(ofFile path: String, limit: Int) -> Result<[UInt8], Refusal> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { return .failure(.unavailable(FileUnavailable(errno: errno))) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return .failure(.unavailable(FileUnavailable(errno: errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(.unavailable(.notAFile)) }
        if let problem = problem(mode: UInt32(info.st_mode)) { return .failure(.openToOthers(problem)) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(.unavailable(FileUnavailable(errno: errno)))
            }
            if count == 0 { return .success(bytes) }
            bytes += chunk[0..<count]
            if bytes.count > limit { return .failure(.unavailable(.tooLarge(limit: limit))) }
        }
    }

    /// Why a file with the permission bits `mode` may not hold passwords, or nil when only its
    /// owner has access to it.
    static func problem(mode: UInt32) -> String? {
        guard mode & 0o077 != 0 else { return nil }
        return "holds passwords, so group and others must have no access to it (mode \(String(mode & 0o777, radix: 8)); chmod 600)"
    }
}
