import Endpoints

/// The state machine of one identity's device login (RFC 8628): polling the token endpoint
/// with the device code until the person approves, refuses, or the code expires. Pure: the
/// clock is passed in, as for `TokenLifecycle`.
///
/// How the relay drives it (one flow per identity at a time, shared by every request):
/// 1. The device authorization answered: `DeviceFlow(identity:tokenEndpoint:authorization:startedAt:)`.
///    Requests meanwhile get a 401 showing `prompt(at:)`.
/// 2. Call `nextAction(at:)` after every event and when the timer it asked for fires: send the
///    request of `.poll` (it is then in flight), arm a timer for `.sleep`, nothing for `.idle`
///    (a poll is in flight); `.ended` says the flow is over.
/// 3. Report the poll's outcome with `pollSucceeded(at:)` (then hand the token to the
///    lifecycle's `fetchSucceeded`) or `pollFailed(_:at:)`, whose `DevicePollOutcome` says what
///    happens next. `authorization_pending` is the normal answer while the person has not
///    acted yet, not a failure: no backoff, nothing to log.
///
/// Rules: polls are `interval` apart (RFC 8628 §3.5), the first one `interval` after the start;
/// `slow_down` adds 5 s to the interval for the rest of the flow; `expired_token` and
/// `access_denied` end it, and so does the clock at `expiresAt`; an unreachable or overloaded
/// token endpoint (5xx, 429, timeouts) is polled again with exponential backoff (§3.5: twice the
/// interval, doubling with each such failure in a row up to `maximumBackoffSeconds`, or its
/// `Retry-After` when longer) until the code expires; any other refusal ends the flow.
public struct DeviceFlow: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// RFC 8628 §3.5: what `slow_down` adds to the interval.
    public static let slowDownSeconds: Double = 5
    /// The longest wait between polls that an unreachable or overloaded token endpoint causes
    /// (unless the interval itself, or a `Retry-After`, is longer).
    public static let maximumBackoffSeconds: Double = 60

    public let identity: Identity
    public let tokenEndpoint: HTTPURL
    public let authorization: DeviceAuthorization
    public let startedAt: Double
    public let expiresAt: Double
    /// The current polling interval (grows with `slow_down`).
    public private(set) var interval: Double
    public private(set) var state: State
    /// The last failure of a poll other than `authorization_pending`, for the `/identities` view.
    public private(set) var lastError: TokenEndpointError?
    /// When the approving poll was answered (for a login duration metric).
    public private(set) var completedAt: Double?
    /// Polls in a row the token endpoint could not answer (the backoff's exponent).
    private var temporaryFailures = 0

    public enum State: Sendable, Equatable {
        /// Waiting to poll at `nextPollAt`.
        case waiting(nextPollAt: Double)
        /// A poll is in flight.
        case polling
        /// The person approved: the token was handed over.
        case completed
        case ended(DeviceFlowEnd)
    }

    public init(identity: Identity, tokenEndpoint: HTTPURL, authorization: DeviceAuthorization, startedAt now: Double) {
        self.identity = identity
        self.tokenEndpoint = tokenEndpoint
        self.authorization = authorization
        self.startedAt = now
        self.expiresAt = now + authorization.expiresIn
        self.interval = authorization.interval
        self.state = .waiting(nextPollAt: now + authorization.interval)
    }

    /// When the next poll is due; nil while one is in flight or when the flow is over.
    public var nextPollAt: Double? {
        if case .waiting(let at) = state { return at }
        return nil
    }

    public var isOver: Bool {
        switch state {
        case .completed, .ended: true
        case .waiting, .polling: false
        }
    }

    /// What to do now.
    public mutating func nextAction(at now: Double) -> DeviceFlowAction {
        switch state {
        case .completed:
            return .ended(nil)
        case .ended(let end):
            return .ended(end)
        case .polling:
            return .idle
        case .waiting(let at):
            if now >= expiresAt {
                state = .ended(.expired)
                return .ended(.expired)
            }
            guard now >= at else { return .sleep(until: at) }
            state = .polling
            return .poll(TokenRequest.deviceCodePoll(for: identity, deviceCode: authorization.deviceCode, at: tokenEndpoint))
        }
    }

    /// The poll in flight produced a token (hand it to the lifecycle's `fetchSucceeded`): the
    /// flow is complete.
    public mutating func pollSucceeded(at now: Double) {
        guard !isOver else { return }
        state = .completed
        completedAt = now
    }

    /// `authorization_pending` or `slow_down`: a poll's answer while the person has not acted.
    public static func isWaitingForThePerson(_ error: TokenEndpointError) -> Bool {
        error.oauthError?.code == .authorizationPending || error.oauthError?.code == .slowDown
    }

    /// The poll in flight did not produce a token.
    @discardableResult
    public mutating func pollFailed(_ error: TokenEndpointError, at now: Double) -> DevicePollOutcome {
        switch state {
        case .completed: return .ended(nil)
        case .ended(let end): return .ended(end)
        case .waiting, .polling: break
        }
        let outcome: DevicePollOutcome
        if !error.isTemporary { temporaryFailures = 0 }
        switch error.oauthError?.code {
        case .authorizationPending?:
            outcome = .pending
            schedulePoll(after: interval, from: now)
        case .slowDown?:
            interval += Self.slowDownSeconds
            lastError = error
            outcome = .slowedDown(interval: interval)
            schedulePoll(after: interval, from: now)
        case .expiredToken?:
            state = .ended(.expired)
            outcome = .ended(.expired)
        case .accessDenied?:
            state = .ended(.denied(error.oauthError))
            outcome = .ended(.denied(error.oauthError))
        default:
            lastError = error
            if error.isTemporary {
                outcome = .retrying(error)
                temporaryFailures += 1
                schedulePoll(after: max(backoff, error.retryAfter ?? 0), from: now)
            } else {
                state = .ended(.refused(error))
                outcome = .ended(.refused(error))
            }
        }
        // A poll answered after the code's expiry ends the flow whatever it said.
        if case .ended(let end) = state { return .ended(end) }
        return outcome
    }

    /// The wait after the latest of `temporaryFailures` polls in a row that the token endpoint could
    /// not answer: the interval doubled for each, up to `maximumBackoffSeconds`.
    private var backoff: Double {
        let doubled = interval * Double(1 << min(temporaryFailures, 16))
        return max(interval, min(doubled, Self.maximumBackoffSeconds))
    }

    /// The next poll, unless the code expires first (then the flow ends at `now`).
    private mutating func schedulePoll(after delay: Double, from now: Double) {
        state = now >= expiresAt ? .ended(.expired) : .waiting(nextPollAt: min(now + delay, expiresAt))
    }

    /// Ends the flow (a logout, the identity removed by a reload).
    public mutating func cancel() {
        guard !isOver else { return }
        state = .ended(.cancelled)
    }

    /// What a person needs at `now`: the 401 problem's and the HTML page's contents.
    public func prompt(at now: Double) -> DevicePrompt {
        DevicePrompt(userCode: authorization.userCode, verificationUri: authorization.verificationUri,
                     verificationUriComplete: authorization.verificationUriComplete,
                     expiresIn: max(0, Int((expiresAt - now).rounded(.down))))
    }

    public var description: String {
        let what: String = switch state {
        case .waiting(let at): "next poll at \(SecondsText.format(at))"
        case .polling: "polling"
        case .completed: "completed"
        case .ended(let end): "ended: \(end)"
        }
        return "DeviceFlow(\(identity.name): \(what), every \(SecondsText.format(interval)) s, expires at \(SecondsText.format(expiresAt)))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["flow": description], displayStyle: .struct)
    }
}

/// What `DeviceFlow.nextAction(at:)` asks for.
public enum DeviceFlowAction: Sendable {
    /// Send this poll now.
    case poll(TokenRequest)
    /// Nothing until this time.
    case sleep(until: Double)
    /// A poll is in flight: wait for its outcome.
    case idle
    /// The flow is over: how it ended (nil when it completed with a token).
    case ended(DeviceFlowEnd?)
}

/// What a failed poll meant.
public enum DevicePollOutcome: Sendable, Equatable {
    /// `authorization_pending`: the person has not acted yet.
    case pending
    /// `slow_down`: polls are now `interval` apart.
    case slowedDown(interval: Double)
    /// The token endpoint could not answer (5xx, 429, unreachable, timeout): polled again.
    case retrying(TokenEndpointError)
    /// The flow is over (nil: it had completed already).
    case ended(DeviceFlowEnd?)
}

/// Why a device flow ended without a token.
public enum DeviceFlowEnd: Sendable, Equatable, CustomStringConvertible {
    /// `expired_token`, or the clock passed `expires_in`.
    case expired
    /// `access_denied`: the person refused.
    case denied(OAuthError?)
    /// The token endpoint refused the polls (`invalid_client`, `invalid_grant`, a broken answer).
    case refused(TokenEndpointError)
    case cancelled

    /// A short code for metrics and logs.
    public var code: String {
        switch self {
        case .expired: "expired"
        case .denied: "access_denied"
        case .refused(let error): error.code
        case .cancelled: "cancelled"
        }
    }

    public var description: String {
        switch self {
        case .expired: "the device code expired before the login was approved; start the login again"
        case .denied(let error): "the login was refused at the identity provider" + (error?.errorDescription.map { " (\($0))" } ?? "")
        case .refused(let error): "the token endpoint refused the device code: \(error)"
        case .cancelled: "the login was cancelled"
        }
    }
}

/// What a person needs to approve a device login: the user code, where to enter it, and how
/// many seconds are left.
public struct DevicePrompt: Sendable, Equatable {
    public let userCode: String
    public let verificationUri: String
    public let verificationUriComplete: String?
    public let expiresIn: Int

    public init(userCode: String, verificationUri: String, verificationUriComplete: String?, expiresIn: Int) {
        self.userCode = userCode
        self.verificationUri = verificationUri
        self.verificationUriComplete = verificationUriComplete
        self.expiresIn = expiresIn
    }
}
