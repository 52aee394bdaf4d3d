// An `auto` identity in the token lifecycle: before discovery, it learns its authorization
// server and client (`AutoResolution`, driven by the token thread). The lookup is driven like
// discovery (`nextAction` answers `.resolve`, the token thread reports `resolved` or
// `resolutionFailed`), fails like it (backoff; a failure only configuration can fix is
// `needsConfiguration`, answered with the `needs-configuration` problem), and happens again when
// the server no longer knows the client (`clientUnknown`).

extension TokenLifecycle {
    /// An `auto` identity that has not learnt its server and client yet.
    public var needsResolution: Bool {
        fatalError("contract: built by the OAuth2 helper")
    }

    /// What it learnt (nil before, and for any other identity).
    public var autoFacts: AutoFacts? {
        fatalError("contract: built by the OAuth2 helper")
    }

    /// The chain completed: the identity as learnt and its endpoints are in force.
    public mutating func resolved(_ resolved: AutoResolved) {
        fatalError("contract: built by the OAuth2 helper")
    }

    /// The chain failed: back off (a temporary failure) or wait for a new configuration.
    public mutating func resolutionFailed(_ error: AutoSetupError, at now: Double) {
        fatalError("contract: built by the OAuth2 helper")
    }

    /// The token endpoint answered `invalid_client` to the registered client: the registration
    /// is dropped (the token thread removes it from the store), tokens and refresh token too,
    /// and the chain runs again (a person logs in again). Returns the key of the registration
    /// dropped (nil when the identity is not `auto` or has none).
    public mutating func clientUnknown(at now: Double) -> RegistrationKey? {
        fatalError("contract: built by the OAuth2 helper")
    }
}
