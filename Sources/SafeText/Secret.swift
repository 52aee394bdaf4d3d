/// A credential an identity holds (client secret, password, refresh token, assertion).
///
/// Printing, interpolating, `dump`ing or debug-printing a `Secret` (or any value holding one)
/// shows only `…`, or `…` plus the last four characters when the secret is at least 16
/// characters long, enough to tell two long secrets apart in a log. Read `value` only where
/// the secret is put on the wire.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let value: String

    public init(_ value: String) {
        self.value = value
    }

    public var description: String {
        redacted(value)
    }

    public var debugDescription: String {
        description
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": description], displayStyle: .struct)
    }
}
