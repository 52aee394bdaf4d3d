import Foundation

/// The tests' way to run the `openssl` command and other tools: a command line for /bin/sh in a
/// directory, its standard output, and an error when it exits with a failure.
public enum TestShell {
    public struct CommandFailed: Error, CustomStringConvertible {
        public let command: String
        public let status: Int32
        public var description: String { "`\(command)` exited with \(status)" }
    }

    /// Runs `command` with /bin/sh in `directory`; its standard output.
    public static func run(_ command: String, in directory: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CommandFailed(command: command, status: process.terminationStatus) }
        return String(decoding: data, as: UTF8.self)
    }
}
