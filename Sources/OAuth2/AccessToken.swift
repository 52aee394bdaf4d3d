import HTTPFields
import SafeText

/// The access token an identity holds, as the request path injects it. Times are in the
/// lifecycle's clock (seconds, any origin, never going back).
public struct AccessToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The token itself: read it only to put it on a forwarded request.
    public let value: String
    /// `Bearer`, normalized.
    public let type: String
    /// When the request that fetched it was sent (the lifetime counts from there).
    public let issuedAt: Double
    public let expiresAt: Double
    /// When a refresh starts, before expiry (see `RefreshSchedule`).
    public let refreshAt: Double
    public let scope: String?
    /// 1 for an identity's first token, then one more for each new token: tells tokens apart
    /// without comparing them.
    public let serial: UInt64

    public init(value: String, type: String = "Bearer", issuedAt: Double, expiresAt: Double, refreshAt: Double,
                scope: String? = nil, serial: UInt64 = 1) {
        self.value = value
        self.type = type
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.refreshAt = refreshAt
        self.scope = scope
        self.serial = serial
    }

    /// False from `expiresAt` on: an expired token is never injected.
    public func isValid(at now: Double) -> Bool {
        now < expiresAt
    }

    public var description: String {
        "\(type) \(redacted(value)) #\(serial), expires at \(SecondsText.format(expiresAt)), refresh at \(SecondsText.format(refreshAt))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["token": description], displayStyle: .struct)
    }
}
