import HTTPFields
import JOSE
import JSON

/// How long a token from a token endpoint's answer lives, and what the relay had to do to get
/// a sane number out of an answer it could not take as given.
///
/// The rules, so that no answer can make the relay refresh in a loop, never refresh, or crash
/// on a number it cannot hold:
/// - the expiry field (`expires_in`, or the identity's `responseFields.expiry`) counts when it
///   is a positive, finite number of seconds, as a JSON number or a decimal string;
/// - anything else there — negative, zero, a string that is not a decimal number, `"NaN"`,
///   `"inf"`, an array — is ignored as if absent (with a warning): the JWT's `exp`, else the
///   identity's `defaultExpiresInSeconds`. A JSON `null` is simply absent. (Bare `NaN`,
///   `Infinity` and numbers beyond a Double, such as `1e400`, are not JSON: such a body is not a
///   token response at all.)
/// - a lifetime longer than `maximumSeconds` (one year), from any source, is cut to it: a token
///   that claims to live for ever is still refreshed now and then;
/// - a lifetime shorter than `RefreshSchedule.minimumInterval` is kept as it is — an expired
///   token is never injected — but the next refresh waits for that interval
///   (see `RefreshSchedule`), so at most one scheduled token request per identity per second.
struct TokenLifetime: Sendable, Equatable {
    /// The longest lifetime taken from an answer: one year.
    static let maximumSeconds: Double = 365 * 24 * 3600

    var seconds: Double
    var source: TokenResponse.ExpirySource
    /// What was adjusted, for one warning line per answer; empty for a well-formed answer.
    var warnings: [LifetimeWarning]

    /// The lifetime of `token` given the expiry member `expiry` (nil when absent) named `field`.
    /// Throws the reason when the token is a JWT whose `exp` has passed and nothing else says
    /// how long it lives.
    static func resolve(expiry: JSONValue?, field: String, token: String, unixTime: Double,
                        defaultSeconds: Double) throws(LifetimeError) -> TokenLifetime {
        var warnings: [LifetimeWarning] = []
        let lifetime: (seconds: Double, source: TokenResponse.ExpirySource)
        switch readSeconds(expiry) {
        case .seconds(let seconds):
            lifetime = (seconds, .expiresIn)
        case .unusable(let reason):
            warnings.append(.ignored(field: field, reason: reason))
            fallthrough
        case .absent:
            if let exp = unverifiedExpiry(ofToken: token) {
                guard exp > unixTime else { throw .jwtExpired }
                lifetime = (exp - unixTime, .jwtExp)
            } else {
                lifetime = (defaultSeconds, .defaultLifetime)
            }
        }
        return bounded(TokenLifetime(seconds: lifetime.seconds, source: lifetime.source, warnings: warnings),
                       field: name(of: lifetime.source, field: field))
    }

    /// The lifetime of a token whose answer says when it expires (`field`, such as GitHub's
    /// `expires_at`): `seconds` from now, which the caller has checked to be positive, bounded as
    /// above.
    static func until(_ seconds: Double, field: String) -> TokenLifetime {
        bounded(TokenLifetime(seconds: seconds, source: .expiresAt, warnings: []), field: field)
    }

    /// `lifetime` cut to `maximumSeconds`, with a warning naming `field` for a cut or for a
    /// lifetime shorter than the refresh interval.
    private static func bounded(_ lifetime: TokenLifetime, field: String) -> TokenLifetime {
        var lifetime = lifetime
        if lifetime.seconds > maximumSeconds {
            lifetime.warnings.append(.capped(field: field))
            lifetime.seconds = maximumSeconds
        }
        if lifetime.seconds < RefreshSchedule.minimumInterval {
            lifetime.warnings.append(.shorterThanRefreshInterval(field: field))
        }
        return lifetime
    }

    /// Why a token answer gives no usable lifetime.
    enum LifetimeError: Error {
        case jwtExpired
    }

    private enum Reading {
        case absent
        case seconds(Double)
        case unusable(LifetimeWarning.Reason)
    }

    /// The `exp` claim (seconds since 1970) of an access token that is a JWT (a compact JWS,
    /// `header.payload.signature`), read without verifying its signature: the relay only needs
    /// to know when the token expires, not whether to trust it. Nil when the token is not such a
    /// JWT or has no numeric, finite `exp`; fractions are kept, unlike `JWTClaims.expiry`'s.
    static func unverifiedExpiry(ofToken token: String) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
              let seconds = (try? JWTClaims(payload: payload))?["exp"]?.double else { return nil }
        return seconds.isFinite ? seconds : nil
    }

    private static func readSeconds(_ value: JSONValue?) -> Reading {
        let seconds: Double
        switch value {
        case nil, .null?:
            return .absent
        case .string(let text)?:
            // Decimal only: `Double("0x10")` would read hex, `Double("nan")` a NaN.
            let trimmed = WhiteSpace.trimmingSpaces(text)
            guard !trimmed.isEmpty, trimmed.utf8.allSatisfy(isDecimalNumberByte), let number = Double(trimmed) else {
                return .unusable(.notANumber)
            }
            seconds = number
        case .integer(let number)?:
            seconds = Double(number)
        case .number(let number)?:
            seconds = number
        case .bool?, .array?, .object?:
            return .unusable(.notANumber)
        }
        guard seconds.isFinite else { return .unusable(.notANumber) }
        guard seconds > 0 else { return .unusable(.notPositive) }
        return .seconds(seconds)
    }

    private static func isDecimalNumberByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    /// The field a lifetime came from, as a warning names it.
    private static func name(of source: TokenResponse.ExpirySource, field: String) -> String {
        switch source {
        case .expiresIn, .expiresAt: field
        case .jwtExp: "exp (JWT claim)"
        case .defaultLifetime: "defaultExpiresInSeconds"
        }
    }
}

/// Something the relay changed about, or noticed in, a token answer's lifetime. Names the field,
/// never its value: a hostile answer may put anything there, a token included.
public enum LifetimeWarning: Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// Zero or negative.
        case notPositive
        /// Not a finite number: a non-numeric string, a boolean, an array, an object, NaN, infinity.
        case notANumber
    }

    /// The expiry field held no usable number and was ignored.
    case ignored(field: String, reason: Reason)
    /// The lifetime was longer than `TokenLifetime.maximumSeconds` and was cut to it.
    case capped(field: String)
    /// The token lives less than `RefreshSchedule.minimumInterval`: it may expire before the
    /// next refresh, and requests then wait for it.
    case shorterThanRefreshInterval(field: String)

    public var field: String {
        switch self {
        case .ignored(let field, _), .capped(let field), .shorterThanRefreshInterval(let field): field
        }
    }

    public var description: String {
        switch self {
        case .ignored(let field, .notPositive):
            "\(field) is zero or negative; ignored"
        case .ignored(let field, .notANumber):
            "\(field) is not a number of seconds; ignored"
        case .capped(let field):
            "the lifetime from \(field) is longer than a year; cut to \(SecondsText.format(TokenLifetime.maximumSeconds)) s"
        case .shorterThanRefreshInterval(let field):
            "the lifetime from \(field) is shorter than \(SecondsText.format(RefreshSchedule.minimumInterval)) s; "
                + "the next refresh waits that long, and requests wait for it once the token has expired"
        }
    }
}
