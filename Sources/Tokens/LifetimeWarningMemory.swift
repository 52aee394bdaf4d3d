import OAuth2

/// What the last token answer of each identity had adjusted in its lifetime, so that an IdP that
/// always answers the same odd way is warned about once, not at every refresh (with 10 ms tokens
/// that would be a line a second). A change — another oddity, or the same after a sound answer —
/// is warned about again.
struct LifetimeWarningMemory {
    private var last: [Int: [LifetimeWarning]] = [:]

    /// The warnings to log for an answer of the identity in `slot`: its `warnings`, unless the
    /// previous answer had the same ones; then none.
    mutating func toLog(_ warnings: [LifetimeWarning], slot: Int) -> [LifetimeWarning] {
        let previous = last[slot] ?? []
        last[slot] = warnings.isEmpty ? nil : warnings
        return warnings == previous ? [] : warnings
    }

    /// The identity was removed or replaced.
    mutating func forget(slot: Int) {
        last[slot] = nil
    }
}
