import Synchronization

/// Set once by `TokenService.stop()`, read by the token loop when woken.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    /// Returns true for the call that set it.
    func set() -> Bool { !value.exchange(true, ordering: .acquiringAndReleasing) }
}
