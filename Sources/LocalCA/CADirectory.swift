#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The CA's directory and its two files, as system calls: the directory created 0700 and
/// refused when anyone else may enter it, the key refused when anyone else may read it, files
/// replaced so that a process killed at any moment leaves the old file or the new one, and a
/// lock so that two processes (`run` and `oauth-relay ca`) do not issue two CAs at once.
///
/// Stricter than the token store's directory (`StoreDirectory`, which refuses only what others
/// may write): the CA's key signs for the intercepted hosts, so nobody else may even list it.
struct CADirectory {
    let path: String

    var certificatePath: String { LocalCA.certificatePath(inDirectory: path) }
    var keyPath: String { path + "/ca.key" }

    /// Creates `path` (0700, and any missing parent 0700) unless it exists, then checks it.
    static func prepare(_ path: String) throws(LocalCAError) -> CADirectory {
        var info = stat()
        if lstat(path, &info) != 0 {
            guard errno == ENOENT else { throw .unsafeDirectory(path: path, reason: errnoText()) }
            try create(path)
        }
        try check(path)
        return CADirectory(path: path)
    }

    /// A directory of this user's that no one else may enter, read or write (mode 0700 or less).
    static func check(_ path: String) throws(LocalCAError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw .unsafeDirectory(path: path, reason: errnoText()) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .unsafeDirectory(path: path, reason: "not a directory") }
        guard info.st_uid == geteuid() else {
            throw .unsafeDirectory(path: path, reason: "owned by uid \(info.st_uid), not by this user (uid \(geteuid()))")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw .unsafeDirectory(path: path, reason: "open to group or others (mode \(String(mode, radix: 8)); use chmod 700)")
        }
    }

    private static func create(_ path: String) throws(LocalCAError) {
        let parent = parentOf(path)
        if parent != path {
            var info = stat()
            if stat(parent, &info) != 0 && errno == ENOENT { try create(parent) }
        }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw .unsafeDirectory(path: path, reason: "cannot create it: \(errnoText())")
        }
    }

    private static func parentOf(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// Runs `body` holding an exclusive `flock` on the directory.
    func withLock<Result>(_ body: () throws(LocalCAError) -> Result) throws(LocalCAError) -> Result {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(path: path, operation: "open", reason: errnoText()) }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .io(path: path, operation: "lock", reason: errnoText()) }
        }
        return try body()
    }

    /// The largest file `contents` reads: a CA's certificate or key is a few hundred bytes.
    static let fileSizeLimit = 65_536

    /// The whole file, or nil when it does not exist; refused when it is a symbolic link (named
    /// so), not a regular file, or larger than `fileSizeLimit`. With `privateToOwner`, a file
    /// someone else owns or may read is refused (checked on the open file, so a swap after the
    /// check is no hole).
    func contents(_ file: String, privateToOwner: Bool) throws(LocalCAError) -> [UInt8]? {
        let descriptor = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP {
                let reason = "is a symbolic link (the CA's files must be regular files in its directory)"
                throw privateToOwner ? .unsafeKeyFile(path: file, reason: reason) : .unreadable(path: file, reason: reason)
            }
            throw .io(path: file, operation: "open", reason: errnoText())
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .io(path: file, operation: "stat", reason: errnoText()) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .unreadable(path: file, reason: "not a regular file") }
        if privateToOwner {
            let mode = info.st_mode & 0o777
            guard info.st_uid == geteuid() else {
                throw .unsafeKeyFile(path: file, reason: "owned by uid \(info.st_uid), not by this user (uid \(geteuid()))")
            }
            guard mode & 0o077 == 0 else {
                throw .unsafeKeyFile(path: file, reason: "readable by group or others (mode \(String(mode, radix: 8)); use chmod 600)")
            }
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        // A CA certificate or key is a few hundred bytes; past 64 KiB it is no such file.
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .io(path: file, operation: "read", reason: errnoText())
            }
            if count == 0 { break }
            bytes += chunk.prefix(count)
            if bytes.count > Self.fileSizeLimit {
                chunk.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
                bytes.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
                throw .unreadable(path: file, reason: "larger than \(Self.fileSizeLimit) bytes, so no CA certificate or key")
            }
        }
        chunk.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
        return bytes
    }

    /// Where `file`'s replacement is written before it is renamed over `file`.
    static func pendingPath(_ file: String) -> String { file + ".new" }

    /// Writes `bytes` to `file`'s pending replacement (`file.new`, mode `mode`), fsynced, and
    /// returns its path; `commit` renames it over `file`. A CA's two files are both written so
    /// before either is renamed: a process killed between the renames leaves `ca.pem.new`
    /// matching the new `ca.key`, which `LocalCA` completes on the next load.
    func writePending(_ file: String, with bytes: [UInt8], mode: mode_t) throws(LocalCAError) -> String {
        let temporary = Self.pendingPath(file)
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw .io(path: temporary, operation: "create", reason: errnoText()) }
        var failure: LocalCAError?
        if fchmod(descriptor, mode) != 0 {
            failure = .io(path: temporary, operation: "chmod", reason: errnoText())
        } else if !Self.writeAll(descriptor, bytes) {
            failure = .io(path: temporary, operation: "write", reason: errnoText())
        } else if fsync(descriptor) != 0 {
            failure = .io(path: temporary, operation: "fsync", reason: errnoText())
        }
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw failure
        }
        return temporary
    }

    /// Renames the pending replacement `pending` over `file`.
    func commit(_ pending: String, to file: String) throws(LocalCAError) {
        guard rename(pending, file) == 0 else { throw .io(path: file, operation: "rename", reason: errnoText()) }
    }

    /// Removes a pending replacement that will not be committed.
    func discard(_ pending: String) {
        unlink(pending)
    }

    /// fsyncs the directory, so that the renames in it survive a power loss.
    func syncDirectory() throws(LocalCAError) {
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw .io(path: path, operation: "open", reason: errnoText()) }
        defer { close(directory) }
        guard fsync(directory) == 0 else { throw .io(path: path, operation: "fsync", reason: errnoText()) }
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }
}

func errnoText() -> String {
    String(cString: strerror(errno))
}
