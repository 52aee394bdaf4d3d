import Endpoints
import JSON
import SafeText

/// A device authorization endpoint's answer (RFC 8628 §3.2): the code the relay polls with,
/// and what a person needs to approve it.
///
/// Read leniently where IdPs differ: Google sends `verification_url` for `verification_uri`,
/// some send numbers as strings. The verification URIs must be absolute http(s) URLs: they are
/// shown as links, and a `javascript:` one would run in the relay's page.
public struct DeviceAuthorization: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// RFC 8628 §3.2: the polling interval when the answer gives none.
    public static let defaultInterval: Double = 5

    /// Polled with; secret (with it anyone could collect the token).
    public let deviceCode: Secret
    /// What the person types at the verification URI (shown by the relay, not a credential on
    /// its own, but kept out of descriptions and logs all the same).
    public let userCode: String
    public let verificationUri: String
    /// The URI with the user code in it, for a link or a QR code.
    public let verificationUriComplete: String?
    /// Seconds the codes live from when they were asked for.
    public let expiresIn: Double
    /// Seconds between polls.
    public let interval: Double

    public init(deviceCode: Secret, userCode: String, verificationUri: String, verificationUriComplete: String? = nil,
                expiresIn: Double, interval: Double = DeviceAuthorization.defaultInterval) {
        self.deviceCode = deviceCode
        self.userCode = userCode
        self.verificationUri = verificationUri
        self.verificationUriComplete = verificationUriComplete
        self.expiresIn = expiresIn
        self.interval = interval
    }

    /// Why an answer is not a usable device authorization (`reason` names the member).
    struct Invalid: Error {
        let reason: String
    }

    /// Longest user code accepted: RFC 8628 §6.1 wants them short enough to type; a long one
    /// is not a user code.
    private static let maximumUserCodeLength = 64

    init(members: [String: JSONValue]) throws(Invalid) {
        guard let deviceCode = members["device_code"]?.string, !deviceCode.isEmpty else {
            throw Invalid(reason: "no device_code string")
        }
        guard let userCode = members["user_code"]?.string, !userCode.isEmpty else {
            throw Invalid(reason: "no user_code string")
        }
        guard userCode.count <= Self.maximumUserCodeLength,
              userCode.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control }) else {
            throw Invalid(reason: "the user_code is longer than \(Self.maximumUserCodeLength) characters or holds control characters")
        }
        let uriMember = members["verification_uri"] != nil ? "verification_uri" : "verification_url"
        guard let uri = members[uriMember]?.string else { throw Invalid(reason: "no verification_uri string") }
        let complete = members["verification_uri_complete"].map { $0.string ?? "" }
        for (name, value) in [(uriMember, uri), ("verification_uri_complete", complete)] {
            guard let value else { continue }
            do throws(HTTPURLSyntaxError) {
                _ = try HTTPURL(absolute: value)
            } catch {
                throw Invalid(reason: "\(name) is not an absolute http(s) URL: \(ErrorText.clean(error.message, removing: [deviceCode]))")
            }
        }
        guard let expiresIn = Self.seconds(members["expires_in"]), expiresIn > 0 else {
            throw Invalid(reason: "no positive expires_in")
        }
        let interval = Self.seconds(members["interval"])
        guard members["interval"] == nil || interval.map({ $0 > 0 }) == true else {
            throw Invalid(reason: "interval is not a positive number of seconds")
        }
        self.init(deviceCode: Secret(deviceCode), userCode: userCode, verificationUri: uri, verificationUriComplete: complete,
                  expiresIn: expiresIn, interval: interval ?? Self.defaultInterval)
    }

    /// A number of seconds, as a JSON number or a numeric string; nil for anything else.
    private static func seconds(_ member: JSONValue?) -> Double? {
        let value = member?.double ?? member?.string.flatMap(Double.init)
        return value.flatMap { $0.isFinite ? $0 : nil }
    }

    public var description: String {
        "device authorization (verify at \(verificationUri), expires in \(SecondsText.format(expiresIn)) s, "
            + "poll every \(SecondsText.format(interval)) s)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["authorization": description], displayStyle: .struct)
    }
}
