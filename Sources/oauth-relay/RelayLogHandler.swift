// RelayLogHandler: swift-log handler writing one line per event to stderr, as JSON objects with
// stable keys (`ts`, `level`, `msg`, then the metadata) or as `key=value` text.
// A line is written with one write(2), so lines from several workers never interleave.

import Logging
import Proxy
#if canImport(Glibc)
import Glibc
import HTTPFields
import SafeText
#endif

struct RelayLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let format: LogFormat

    static func bootstrap(level: Logger.Level, format: LogFormat) {
        LoggingSystem.bootstrap { _ in RelayLogHandler(logLevel: level, format: format) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let level = event.level
        let message = event.message
        var all = metadata
        if let explicit = event.metadata { all.merge(explicit) { $1 } }
        if let error = event.error { all["error"] = .string("\(error)") }
        let keys = all.keys.sorted()
        var text: String
        switch format {
        case .json:
            text = "{\"ts\":\"\(Self.timestamp())\",\"level\":\"\(level)\",\"msg\":\(JSONText.quote(message.description))"
            for key in keys { text += ",\(JSONText.quote(key)):\(Self.json(all[key]!))" }
            text += "}\n"
        case .text:
            text = "\(Self.timestamp()) \(level) \(message)"
            for key in keys { text += " \(key)=\(Self.plain(all[key]!))" }
            text += "\n"
        }
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }

    private static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let s): return JSONText.quote(s)
        case .stringConvertible(let c):
            let s = c.description
            if c is Int || c is UInt64 || c is Double || c is Bool { return s }
            return JSONText.quote(s)
        case .array(let values): return "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let d): return "{" + d.keys.sorted().map { "\(JSONText.quote($0)):\(json(d[$0]!))" }.joined(separator: ",") + "}"
        }
    }

    private static func plain(_ value: Logger.Metadata.Value) -> String {
        let s = "\(value)"
        return s.contains(" ") || s.isEmpty ? JSONText.quote(s) : s
    }

    /// UTC, millisecond precision: 2026-11-21T14:03:05.123Z.
    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = Int(now.tv_nsec / 1_000_000)
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
    }
}
