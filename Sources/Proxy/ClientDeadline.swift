/// What a client connection's one timer stands for when it fires: the connection arms a single
/// timer for whichever deadline runs, and what expired follows from where the connection and its
/// exchange stand (`Exchange.expiredDeadline`).
enum ClientDeadline {
    case none
    /// Idle keep-alive connection: close quietly.
    case idle
    /// The request head did not arrive within `headerTimeoutSeconds`: 408 and close.
    case header
    /// The token did not come within `tokenWaitSeconds` (`tokenWaitExpired`).
    case tokenWait
    /// The request body stopped coming (`requestBodyTimedOut`).
    case requestBody

    /// The deadline that runs in `phase`; `waitingForToken`: the request is parked for its token;
    /// `bodyClockRuns`: the request body's deadline runs.
    init(phase: Exchange.Phase, waitingForToken: Bool, bodyClockRuns: Bool) {
        switch phase {
        case .awaitingRequest: self = .idle
        case .readingHead: self = .header
        case .exchanging: self = waitingForToken ? .tokenWait : (bodyClockRuns ? .requestBody : .none)
        case .tunnelling, .closing: self = .none
        }
    }
}
