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
    /// Why the file at `path` may not hold passwords, or nil when only its owner has access to it
    /// (or it cannot be looked at: reading it reports that).
    static func problem(ofFile path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return problem(mode: UInt32(info.st_mode))
    }

    /// `problem(ofFile:)` for the permission bits `mode`.
    static func problem(mode: UInt32) -> String? {
        guard mode & 0o077 != 0 else { return nil }
        return "holds passwords, so group and others must have no access to it (mode \(String(mode & 0o777, radix: 8)); chmod 600)"
    }
}
