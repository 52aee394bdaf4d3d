/// How long a request waits before it may start another device login, after logins that ended
/// without a token (the person refused, or let the code expire): a device authorization shows a
/// code nobody may be there to enter, so requests that keep coming must not make the IdP issue
/// one code after another. The wait doubles with each such login in a row, from `firstDelay` to
/// `maximumDelay`; a login that brings a token, or an operator's action (`oauth-relay login`,
/// `POST /identities/NAME/login`, a logout), ends it. Meanwhile requests get the login-required
/// problem with a `Retry-After` of the time left. Pure: the clock is passed in (monotonic seconds).
public struct DeviceLoginBackoff: Equatable, Sendable {
    public static let firstDelay = 30.0
    public static let maximumDelay = 600.0

    /// Device logins in a row that ended without a token.
    public private(set) var endedWithoutToken = 0
    /// Until when no request starts a device login (nil: one may start).
    public private(set) var until: Double?

    public init() {}

    /// The delay after the `count`th login in a row that ended without a token (1: the first).
    public static func delay(afterEndedLogins count: Int) -> Double {
        guard count > 0 else { return 0 }
        // 2^(count - 1), stopped once past the maximum so that it never overflows.
        var delay = firstDelay
        for _ in 1..<count where delay < maximumDelay { delay *= 2 }
        return min(delay, maximumDelay)
    }

    /// A device login ended without a token at `now`.
    public mutating func loginEndedWithoutToken(at now: Double) {
        endedWithoutToken += 1
        until = now + Self.delay(afterEndedLogins: endedWithoutToken)
    }

    /// A login brought a token, or an operator acted: the next request may start a login at once.
    public mutating func reset() {
        self = DeviceLoginBackoff()
    }

    /// Whether a request may start a device login at `now`.
    public func allowsStart(at now: Double) -> Bool {
        (until ?? now) <= now
    }

    /// Whole seconds until a request may start one (at least 1), or nil when it may now.
    public func retryAfterSeconds(at now: Double) -> Int? {
        guard let until, until > now else { return nil }
        return max(1, Int((until - now).rounded(.up)))
    }
}
