import FoundationEssentials
import JSON

/// A configuration file's bytes as read, with the directory its relative paths are resolved
/// against: what the relay keeps of the configuration in force, so that a rotated certificate or
/// key re-applies that very text, never a config file caught half-edited.
public struct ConfigText: Sendable, Equatable {
    public var bytes: Data
    public var baseDirectory: String

    public init(bytes: Data, baseDirectory: String) {
        self.bytes = bytes
        self.baseDirectory = baseDirectory
    }
}

/// Reads and validates a configuration file.
public enum ConfigLoader {
    /// Reads the file at `path` (relative paths from the current directory); `…File`, `caFile`
    /// and certificate paths in it are relative to the file's directory.
    public static func load(path: String, environment: [String: String]) throws(ConfigErrors) -> RelayConfig {
        try decode(read(path: path), environment: environment)
    }

    /// The file at `path`, not decoded yet.
    public static func read(path: String) throws(ConfigErrors) -> ConfigText {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            let reason = FileManager.default.fileExists(atPath: url.path) ? "cannot read the file" : "no such file"
            throw ConfigErrors([ConfigError(path: "$", message: "\(reason): \(url.path)")])
        }
        return ConfigText(bytes: data, baseDirectory: url.deletingLastPathComponent().path)
    }

    /// Decodes `text`, reading the files it names anew.
    public static func decode(_ text: ConfigText, environment: [String: String]) throws(ConfigErrors) -> RelayConfig {
        try decode(json: text.bytes, baseDirectory: text.baseDirectory, environment: environment)
    }

    /// Decodes a configuration from JSON; relative file paths in it are resolved against
    /// `baseDirectory`. Throws every problem found, in document order.
    public static func decode(json: Data, baseDirectory: String, environment: [String: String]) throws(ConfigErrors) -> RelayConfig {
        let bytes = [UInt8](json)
        let root: JSONNode
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            let location = SourceLocation(offset: error.offset, in: bytes)
            throw ConfigErrors([ConfigError(path: "$", message: "invalid JSON: \(error.message)",
                                            line: location.line, column: location.column)])
        }
        let context = DecodingContext(environment: environment, baseDirectory: baseDirectory)
        let decoded = RelayConfigDecoding(context: context).decodeRelayConfig(root)
        guard var config = decoded, !context.hasProblems else {
            throw ConfigErrors(context.finish(source: bytes))
        }
        config.watchedFiles = context.watchedFiles
        return config
    }
}
