/// Where an `auto` identity's learning of its authorization server and client stands (for any
/// other identity it stays `unresolved`, and is never looked at). Whether a resolution is under
/// way is `TokenActivity`'s (`resolving`), and its temporary failures' backoff `FetchFailures`'.
enum AutoProgress: Sendable {
    /// Not learnt yet: a resolution is due, under way, or waiting for its backoff.
    case unresolved
    /// The chain failed in a way only configuration can help with (or a fix on the servers):
    /// it runs again when `retry` is due; requests get the problem meanwhile.
    case needsConfiguration(AutoSetupError, retry: ResolutionRetry)
    /// Learnt: the identity and endpoints in force are `resolved`'s; `configured` is the identity
    /// as it was before, to which a client the server no longer knows returns.
    case resolved(AutoResolved, configured: Identity)
}
