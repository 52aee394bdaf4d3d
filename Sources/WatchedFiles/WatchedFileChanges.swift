/// The files of a configuration as last observed, and the decision, with no I/O, of which of them
/// changed since: the caller observes every path (`FileIdentity.observe`) and hands the results in.
///
/// Paths are compared, not keys: two settings naming one file (a CA bundle shared by routes)
/// change together. A file that was missing and still is has not changed; one that appears or
/// disappears has.
public struct WatchedFileChanges: Sendable, Equatable {
    /// The configuration's files, in the order it names them.
    public private(set) var files: [WatchedFile]
    /// By path; nil: the file was missing when last observed.
    public private(set) var identities: [String: FileIdentity?]

    /// `files` with their identities as observed (`observed[path]`, nil or absent: missing).
    public init(files: [WatchedFile], observed: [String: FileIdentity?]) {
        self.files = files
        var identities: [String: FileIdentity?] = [:]
        for file in files { identities[file.path] = observed[file.path] ?? nil }
        self.identities = identities
    }

    /// `files` with the identities recorded as the configuration read them (`WatchedFile.atLoad`;
    /// the first of several settings naming one path).
    public init(filesAtLoad files: [WatchedFile]) {
        self.init(files: files, observed: Self.atLoad(files))
    }

    /// Another configuration's files, a new path taking the identity recorded as it was read.
    public mutating func follow(filesAtLoad newFiles: [WatchedFile]) {
        follow(newFiles, observed: Self.atLoad(newFiles))
    }

    private static func atLoad(_ files: [WatchedFile]) -> [String: FileIdentity?] {
        var observed: [String: FileIdentity?] = [:]
        for file in files where observed[file.path] == nil { observed[file.path] = file.atLoad }
        return observed
    }

    /// The distinct paths to observe, in the order the configuration names them.
    public var paths: [String] {
        var seen = Set<String>()
        return files.map(\.path).filter { seen.insert($0).inserted }
    }

    /// The files whose path's identity in `observed` differs from the one held (a path absent
    /// from `observed` counts as missing), in the configuration's order; empty when none did.
    public func changed(in observed: [String: FileIdentity?]) -> [WatchedFile] {
        files.filter { file in (identities[file.path] ?? nil) != (observed[file.path] ?? nil) }
    }

    /// Holds `observed` as the files' identities from now on (after a change was handled, applied
    /// or not: a failed re-apply is retried at the next change, not at every observation).
    public mutating func adopt(_ observed: [String: FileIdentity?]) {
        for path in identities.keys { identities[path] = observed[path] ?? nil }
    }

    /// Another configuration's files: a path both name keeps the identity held (so a change made
    /// while the new configuration loaded is still seen at the next observation); a new path takes
    /// its identity from `observed`.
    public mutating func follow(_ newFiles: [WatchedFile], observed: [String: FileIdentity?]) {
        var next: [String: FileIdentity?] = [:]
        for file in newFiles {
            if let held = identities[file.path] {
                next[file.path] = held
            } else {
                next[file.path] = observed[file.path] ?? nil
            }
        }
        files = newFiles
        identities = next
    }
}
