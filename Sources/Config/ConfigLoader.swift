import FoundationEssentials
import JSON

/// Reads and validates a configuration file.
public enum ConfigLoader {
    /// Reads the file at `path` (relative paths from the current directory); `…File`, `caFile`
    /// and certificate paths in it are relative to the file's directory.
    public static func load(path: String, environment: [String: String]) throws(ConfigErrors) -> RelayConfig {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            let reason = FileManager.default.fileExists(atPath: url.path) ? "cannot read the file" : "no such file"
            throw ConfigErrors([ConfigError(path: "$", message: "\(reason): \(url.path)")])
        }
        return try decode(json: data, baseDirectory: url.deletingLastPathComponent().path, environment: environment)
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
        let config = RelayConfigDecoding(context: context).decodeRelayConfig(root)
        guard let config, !context.hasProblems else {
            throw ConfigErrors(context.finish(source: bytes))
        }
        return config
    }
}
