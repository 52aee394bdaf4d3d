import OAuth2

/// A worker's memory of the last step-up each identity declined: the token the challenge came
/// to and what it asked. The same challenge to the same token is declined again here, without
/// the identity's lock or a log line at info: an upstream repeating a declined challenge on
/// every request costs a comparison. A declined step-up stays declined for a token (the
/// identity forgets declined ones only at a logout, which replaces the token); one with a
/// `max_age` is not kept, as time may change its answer.
struct DeclinedStepUps {
    private struct Entry {
        var token: WorkerTokens.CachedToken
        var stepUp: StepUp
    }

    /// By identity slot.
    private var entries: [Int: Entry] = [:]

    /// Whether the identity at `slot` declined `stepUp` asked of `token`.
    func contains(slot: Int, token: WorkerTokens.CachedToken, stepUp: StepUp) -> Bool {
        guard let entry = entries[slot] else { return false }
        return entry.token === token && entry.stepUp == stepUp
    }

    /// The identity at `slot` declined `stepUp` asked of `token`.
    mutating func note(slot: Int, token: WorkerTokens.CachedToken, stepUp: StepUp) {
        guard stepUp.maxAge == nil else { return }
        entries[slot] = Entry(token: token, stepUp: stepUp)
    }

    /// A reload kept only the identities at `slots`.
    mutating func keepOnly(slots: Set<Int>) {
        entries = entries.filter { slots.contains($0.key) }
    }
}
