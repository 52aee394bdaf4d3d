// TokenPersistence: the token loop's side of the token store (TokenStore module). Only the token
// loop calls it, so the store is never touched on a request path.
//
// A fetch with a store goes: take the identity's entry lock (polled with a timer, never blocking
// the loop, at most the token request timeout), read the entry and let the lifecycle decide
// whether the fetch is still needed (`TokenLifecycle.storedEntryRead`), send the request, write
// the result before it is published, release the lock. See FileLockedFetch.swift.
//
// An identity whose DPoP key is generated per process keeps nothing in the store: its tokens
// are bound to a key no other process (and no later one) holds. For it every call here does
// what having no store would: no lock, nothing read, nothing written.

import EventLoop
import HTTPClient
import Logging
import OAuth2
import TokenStore

/// Runs on the token loop only.
final class TokenPersistence {
    let store: TokenStore
    private let loop: EventLoop
    private let logger: Logger
    private let observer: (any TokenObserver)?
    /// Locks held by fetches under way, by slot.
    private var locks: [Int: EntryLock] = [:]
    /// Timers polling a busy lock, by slot.
    private var lockPolls: [Int: LoopTimer] = [:]
    private var fingerprints: [Int: SettingsFingerprint] = [:]
    /// How often a busy lock is tried again. Short: the other process holds it for one token
    /// request, and a waiting identity has requests parked.
    private static let pollMilliseconds: UInt64 = 10

    init(store: TokenStore, loop: EventLoop, logger: Logger, observer: (any TokenObserver)? = nil) {
        self.store = store
        self.loop = loop
        self.logger = logger
        self.observer = observer
    }

    private func count(_ tokens: IdentityTokens, _ operation: String, _ outcome: String) {
        observer?.tokenStoreOperation(identity: tokens.identity.name, operation: operation, outcome: outcome)
        // The backend-level series: every outcome that is no failure or timeout is `ok`.
        observer?.storeOperation(backend: "file", outcome: outcome == "failed" || outcome == "moved_aside" ? "failed"
                                     : outcome == "timed_out" ? "timed_out" : "ok")
    }

    /// A fetch waiting for its entry lock.
    private struct LockWait {
        let deadline: Double
        let locked: () -> Void
        let timedOut: () -> Void
    }

    private var lockWaits: [Int: LockWait] = [:]

    /// Calls `locked` once the entry lock of `tokens` is held, or `timedOut` when another process
    /// held it until `deadline` (monotonic seconds). A store failure is logged and `locked` runs
    /// without the lock: the relay keeps serving from memory when the disk fails.
    func withLock(_ tokens: IdentityTokens, until deadline: Double, locked: @escaping () -> Void, timedOut: @escaping () -> Void) {
        guard Self.isStored(tokens) else { return locked() }
        lockWaits[tokens.slot] = LockWait(deadline: deadline, locked: locked, timedOut: timedOut)
        tryLock(tokens)
    }

    private func tryLock(_ tokens: IdentityTokens) {
        guard let wait = lockWaits[tokens.slot] else { return }
        let name = tokens.identity.name
        do {
            if let lock = try store.tryLock(identity: name) {
                locks[tokens.slot] = lock
                lockWaits[tokens.slot] = nil
                count(tokens, "lock", "acquired")
                return wait.locked()
            }
        } catch {
            count(tokens, "lock", "failed")
            logger.warning("token store lock failed", metadata: ["identity": .string(name), "error": .string("\(error)")])
            lockWaits[tokens.slot] = nil
            return wait.locked()
        }
        guard monotonicSeconds() < wait.deadline else {
            lockWaits[tokens.slot] = nil
            count(tokens, "lock", "timed_out")
            return wait.timedOut()
        }
        let poll = lockPolls[tokens.slot] ?? LoopTimer(loop: loop) { [unowned self] in self.tryLock(tokens) }
        lockPolls[tokens.slot] = poll
        poll.start(afterMilliseconds: Self.pollMilliseconds)
    }

    func holdsLock(_ tokens: IdentityTokens) -> Bool { holdsLock(slot: tokens.slot) }

    func holdsLock(slot: Int) -> Bool { locks[slot] != nil }

    /// Releases the entry lock of `tokens`, if held.
    func unlock(_ tokens: IdentityTokens) {
        locks.removeValue(forKey: tokens.slot)?.release()
    }

    /// The entry of `tokens` in the lifecycle's clock: the access token (nil when absent, for
    /// other settings or another key, or moved aside) and refresh token. Logs a moved-aside entry once.
    func read(_ tokens: IdentityTokens) -> HeldTokens {
        guard Self.isStored(tokens) else { return HeldTokens() }
        let name = tokens.identity.name
        do {
            switch try store.read(identity: name, fingerprint: fingerprint(tokens)) {
            case .found(let stored):
                count(tokens, "read", "found")
                return StoredTokenClock.held(stored, identity: tokens.identity)
            case .empty:
                count(tokens, "read", "empty")
                return HeldTokens()
            case .otherSettings:
                count(tokens, "read", "other_settings")
                return HeldTokens()
            case .otherKey:
                count(tokens, "read", "other_key")
                return HeldTokens()
            case .movedAside(let reason, let movedTo):
                count(tokens, "read", "moved_aside")
                logger.warning("token store entry moved aside", metadata: [
                    "identity": .string(name), "reason": .string(reason), "moved_to": .string(movedTo),
                ])
                return HeldTokens()
            }
        } catch {
            count(tokens, "read", "failed")
            logger.warning("token store read failed", metadata: ["identity": .string(name), "error": .string("\(error)")])
            return HeldTokens()
        }
    }

    /// Writes what `tokens` holds (times turned to wall-clock time); removes the entry when it
    /// holds nothing. A failure is logged: the token is still used, only not kept.
    func write(_ held: HeldTokens, for tokens: IdentityTokens) {
        guard Self.isStored(tokens) else { return }
        let name = tokens.identity.name
        do {
            try store.write(StoredTokenClock.stored(held), identity: name, fingerprint: fingerprint(tokens))
            count(tokens, "write", "ok")
        } catch {
            count(tokens, "write", "failed")
            logger.warning("token store write failed", metadata: ["identity": .string(name), "error": .string("\(error)")])
        }
    }

    /// Removes the entry of `tokens` (`DELETE /identities/NAME/token`) under its lock, waiting at
    /// most `lockTimeout` seconds for it (blocking the token loop: a logout is rare, and the lock is
    /// held by a re-seal for a moment, or by another process for one token request). The lock held
    /// by this process's own fetch is not waited for. When it cannot be had, the entry stays and
    /// the removal is logged and counted as failed.
    func remove(_ tokens: IdentityTokens, lockTimeout: Double) {
        guard Self.isStored(tokens) else { return }
        do {
            if holdsLock(tokens) {
                try store.removeHoldingLock(identity: tokens.identity.name)
            } else {
                try store.remove(identity: tokens.identity.name, lockTimeout: lockTimeout)
            }
            count(tokens, "remove", "ok")
        } catch {
            count(tokens, "remove", "failed")
            logger.warning("token store remove failed", metadata: ["identity": .string(tokens.identity.name), "error": .string("\(error)")])
        }
    }

    /// How long a token request may take, the longest the entry lock is waited for.
    static func lockWait(_ limits: HTTPClientLimits) -> Double {
        Double(limits.connectTimeoutMilliseconds + limits.responseTimeoutMilliseconds) / 1000
    }

    /// Forgets what is kept for a slot a reload retired, unless a fetch of it still waits for or
    /// holds its lock (that fetch ends first and unlocks).
    func forget(slot: Int) {
        guard lockWaits[slot] == nil, locks[slot] == nil else { return }
        fingerprints[slot] = nil
        lockPolls.removeValue(forKey: slot)?.close()
    }

    /// The identity of `slot` learnt another client (an `auto` identity resolved): its entry's
    /// settings fingerprint is computed again; `identity`'s, when given (the identity as it is
    /// about to be: a step-up login's tokens are kept before its scope is the identity's).
    func settingsChanged(slot: Int, to identity: Identity? = nil) {
        fingerprints[slot] = identity.map(SettingsFingerprint.init)
    }

    /// Stops waiting for locks. Locks held stay held: their requests are let finish, and
    /// release them (TokenRequests: kept while stopping).
    func stop() {
        lockWaits.removeAll()
        for poll in lockPolls.values { poll.close() }
        lockPolls.removeAll()
    }

    /// Whether the identity's tokens go to the store: not when they are bound to a DPoP key
    /// generated by this process, nor when the identity's own key signs them (a new one costs
    /// less than the store).
    static func isStored(_ tokens: IdentityTokens) -> Bool {
        if case .generatedKey = tokens.identity.dpop { return false }
        return !tokens.identity.grant.isSelfSigned
    }

    private func fingerprint(_ tokens: IdentityTokens) -> SettingsFingerprint {
        if let known = fingerprints[tokens.slot] { return known }
        let fingerprint = SettingsFingerprint(tokens.identity)
        fingerprints[tokens.slot] = fingerprint
        return fingerprint
    }
}
