/// Whether re-applying the configuration after a file change is failing, so that an outage (a
/// file missing or half-written in the middle of a rotation) is warned about once, not at every
/// change that still does not load, and its end is told.
public enum RotationOutage: Sendable, Equatable {
    /// The last re-apply succeeded (or none was needed yet).
    case none
    /// Re-applying has failed since the warning that opened this outage.
    case failing

    /// What to tell after an attempt.
    public enum Report: Sendable, Equatable {
        /// Applied: an info line (`after` an outage, the line says it ended).
        case applied(afterOutage: Bool)
        /// A failure that opens an outage: one warning.
        case warnOutageStarted
        /// Another failure of the same outage: nothing above debug.
        case stillFailing
    }

    /// Whether to re-apply now: when a watched file changed, and, while the last re-apply failed,
    /// at every observation even if none did (what made it fail, say an empty `clientSecretFile`,
    /// may be a file no watcher looks at, and a renewed certificate waits on it).
    public func reapplies(filesChanged: Bool) -> Bool {
        filesChanged || self == .failing
    }

    /// Records an attempt's outcome; what to tell of it.
    public mutating func record(applied: Bool) -> Report {
        defer { self = applied ? .none : .failing }
        switch (self, applied) {
        case (.none, true): return .applied(afterOutage: false)
        case (.failing, true): return .applied(afterOutage: true)
        case (.none, false): return .warnOutageStarted
        case (.failing, false): return .stillFailing
        }
    }
}
