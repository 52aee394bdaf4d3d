/// What the token loop does next for one identity, as `TokenLifecycle.nextAction(at:)` answers
/// it.
public enum TokenAction: Sendable {
    /// Send this token request now; the lifecycle counts it in flight.
    case fetch(TokenRequest)
    /// Read the IdP's metadata (`issuer`) for the endpoints the configuration does not name;
    /// report it with `discovered` or `discoveryFailed`.
    case discover
    /// An `auto` identity learns its authorization server and client (`AutoResolution`);
    /// report with `resolved` or `resolutionFailed`.
    case resolve
    /// Start a device login: send this request to the device authorization endpoint and
    /// report its answer with `deviceAuthorized` or `deviceAuthorizationFailed`.
    case authorizeDevice(TokenRequest)
    /// Nothing is due before `until` (monotonic seconds): arm a timer for it.
    case sleep(until: Double)
    /// Nothing to do until an event: a fetch's result, a login, a configuration change.
    case idle
}
