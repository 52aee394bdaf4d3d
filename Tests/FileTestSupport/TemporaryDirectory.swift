// A scratch directory for the tests that read and write files (ConfigTests, TokenStoreTests,
// TokensTests): a test-only library, so it is written once.

import Foundation

/// A fresh directory under the system's temporary one, private to its owner (0700, as the token
/// store wants its own), removed by `remove()`.
public struct TemporaryDirectory {
    public let path: String

    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("oauth-relay-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes `contents` to the file `name`; returns its path.
    @discardableResult
    public func write(_ name: String, _ contents: String) throws -> String {
        let file = path + "/" + name
        try contents.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    public func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path + "/" + name))
    }

    public func bytes(of name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path + "/" + name)))
    }

    /// The permission bits of `name`.
    public func mode(of name: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "/" + name)
        return (attributes[.posixPermissions] as! NSNumber).intValue & 0o777
    }

    /// The names in the directory, sorted.
    public func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }
}
