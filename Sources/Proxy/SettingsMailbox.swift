import Locking
import Synchronization

/// Where a reload publishes new settings for every worker: a generation number each request
/// compares (one atomic load, never written on the request path) and the settings behind a lock
/// taken only when the generation changed.
public final class SettingsMailbox: Sendable {
    private let published: Locked<(ProxySettings, UInt64)>
    private let generationCounter = Atomic<UInt64>(0)

    public init(_ settings: ProxySettings) {
        published = Locked((settings, 0))
    }

    var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

    /// The settings in force and their generation.
    var current: (ProxySettings, UInt64) { published.withLock { $0 } }

    /// Puts `settings` in force for requests that start from now on.
    public func publish(_ settings: ProxySettings) {
        published.withLock { value in
            value = (settings, value.1 + 1)
            generationCounter.store(value.1, ordering: .releasing)
        }
    }
}
