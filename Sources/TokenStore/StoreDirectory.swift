#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's directory and the file operations on it, as system calls: creating the directory
/// 0700, refusing one others may write to, and replacing a file so that a process killed at any
/// moment leaves either the old or the new content, never a mix.
enum StoreDirectory {
    /// Creates `path` (0700, and any missing parent 0700) unless it exists, then checks it.
    static func prepare(_ path: String) throws(StoreError) {
        var info = stat()
        if stat(path, &info) != 0 {
            guard errno == ENOENT else { throw StoreError.unsafeDirectory(path: path, reason: errnoText()) }
            try create(path)
        }
        try check(path)
    }

    /// Refuses a path that is no directory, belongs to another user, or that group or others
    /// may write to: whoever can write there can swap entries and lock files under the relay.
    static func check(_ path: String) throws(StoreError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw StoreError.unsafeDirectory(path: path, reason: errnoText()) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw StoreError.unsafeDirectory(path: path, reason: "not a directory") }
        guard info.st_uid == geteuid() else {
            throw StoreError.unsafeDirectory(path: path, reason: "owned by uid \(info.st_uid), not by this user (uid \(geteuid()))")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o022 == 0 else {
            throw StoreError.unsafeDirectory(path: path, reason: "writable by group or others (mode \(String(mode, radix: 8)); use chmod 700)")
        }
    }

    private static func create(_ path: String) throws(StoreError) {
        let parent = parentOf(path)
        if parent != path {
            var info = stat()
            if stat(parent, &info) != 0 && errno == ENOENT { try create(parent) }
        }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw StoreError.unsafeDirectory(path: path, reason: "cannot create it: \(errnoText())")
        }
        // mkdir's mode is filtered by the umask; 0700 is what the store promises.
        chmod(path, 0o700)
    }

    static func parentOf(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// Replaces `path` with `bytes`: a temporary file in the same directory (so the rename stays
    /// on one file system), written and fsynced, renamed over `path`, then the directory fsynced
    /// so the rename itself survives a power loss. Readers see the old file or the new one.
    static func replace(_ path: String, with bytes: [UInt8], temporaryName: String) throws(StoreError) {
        let directory = parentOf(path)
        let temporary = directory + "/" + temporaryName
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw StoreError.io(path: temporary, operation: "create", reason: errnoText()) }
        var failure: StoreError?
        if !writeAll(descriptor, bytes) {
            failure = .io(path: temporary, operation: "write", reason: errnoText())
        } else if fsync(descriptor) != 0 {
            failure = .io(path: temporary, operation: "fsync", reason: errnoText())
        }
        close(descriptor)
        if failure == nil, rename(temporary, path) != 0 {
            failure = .io(path: path, operation: "rename", reason: errnoText())
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        try syncDirectory(directory)
    }

    static func syncDirectory(_ directory: String) throws(StoreError) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StoreError.io(path: directory, operation: "open", reason: errnoText()) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw StoreError.io(path: directory, operation: "fsync", reason: errnoText()) }
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

    /// The whole file, or nil when it does not exist. Entries are small; a file past 1 MiB is
    /// no entry and is read as far as that bound only.
    static func contents(_ path: String) throws(StoreError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw StoreError.io(path: path, operation: "open", reason: errnoText())
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while bytes.count < 1 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(path: path, operation: "read", reason: errnoText())
            }
            if count == 0 { break }
            bytes += chunk.prefix(count)
        }
        return bytes
    }

    /// The names of the files in `directory`.
    static func fileNames(_ directory: String) throws(StoreError) -> [String] {
        guard let stream = opendir(directory) else { throw StoreError.io(path: directory, operation: "opendir", reason: errnoText()) }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
