// The DPoP nonces upstreams send an identity's requests (RFC 9449 §9), shared by every worker.
//
// A resource server that wants nonces sends one in `DPoP-Nonce` (with a `use_dpop_nonce` 401, or
// with any answer when it rotates it) and refuses proofs without the current one. Each worker signs
// its own proofs, but the nonce is the server's, not the worker's: a rotation learnt by one worker
// is put here, and every worker's next proof to that server carries it, so no worker pays a 401
// round-trip to learn what another already knows.
//
// The hot path reads the slot once per proof without a lock: each worker keeps a copy
// (`DPoPNonceCopy`) with the version it was read at, and one atomic load of the slot's version
// says whether the copy is still the nonce in force. Only after a change does a worker take the
// slot's lock, once, to copy the new nonce. A new nonce is written under the lock, rarely (when a
// server rotates it), and only over the version the proof it answers carried (compare-and-set): a
// response the server made before it rotated, read by one worker after another heard the new nonce,
// answers a proof of an older version and leaves the new nonce in force, where a plain last-writer-
// wins would send every worker back to the old one (one `use_dpop_nonce` answer each). Two workers
// that hear two nonces in answers to proofs of the same version leave the first; a proof with the
// other costs at most one `use_dpop_nonce` answer, as before. A `use_dpop_nonce` answer is learnt by
// the same rule; the request it answers is replayed with the nonce it asked for, whatever the slot
// holds by then (`WorkerProofs.withProof`).

import Locking
import Synchronization

/// The latest `DPoP-Nonce` one upstream origin sent one identity, for every worker.
public final class SharedDPoPNonce: Sendable {
    /// A nonce and the version it was written at (0: no nonce yet).
    public struct Learnt: Sendable, Equatable {
        public var version: UInt64
        public var nonce: [UInt8]?
    }

    /// `current.version`, readable without the lock: stored (releasing) under the lock after
    /// each change, so a reader that sees the version it holds knows its copy is current.
    private let changes = Atomic<UInt64>(0)
    private let current = Locked(Learnt(version: 0, nonce: nil))

    public init() {}

    /// The version of the nonce in force: one atomic load.
    public var version: UInt64 { changes.load(ordering: .acquiring) }

    /// The nonce in force and its version, read under the lock.
    public func read() -> Learnt {
        current.withLock { $0 }
    }

    /// The server sent `nonce` (already checked: `DPoPNonce.isValid`) in answer to a proof that
    /// carried the nonce of `version`. True when it is now in force: the slot was still at
    /// `version` and held another nonce. False when it is the nonce in force already, or the slot
    /// moved past `version` (another worker heard a newer nonce since that proof was made, and an
    /// answer to an older proof must not put an older nonce back).
    @discardableResult
    public func learn(_ nonce: some Collection<UInt8>, ifVersion version: UInt64) -> Bool {
        current.withLock { learnt in
            guard learnt.version == version else { return false }
            if let known = learnt.nonce, known.elementsEqual(nonce) { return false }
            learnt = Learnt(version: learnt.version + 1, nonce: Array(nonce))
            changes.store(learnt.version, ordering: .releasing)
            return true
        }
    }
}

/// One worker's copy of a `SharedDPoPNonce`: read again (under the slot's lock) only when the
/// slot's version moved, so a proof costs one atomic load to know its nonce.
public struct DPoPNonceCopy {
    private var learnt = SharedDPoPNonce.Learnt(version: 0, nonce: nil)

    public init() {}

    /// The nonce in force in `shared` and its version (version 0, nil: none yet). `shared` must be
    /// the slot this copy was first read from: versions of different slots say nothing of each other.
    public mutating func read(_ shared: SharedDPoPNonce) -> SharedDPoPNonce.Learnt {
        if shared.version != learnt.version { learnt = shared.read() }
        return learnt
    }

    /// The nonce in force in `shared` (nil: none yet), as `read(_:)`.
    public mutating func nonce(in shared: SharedDPoPNonce) -> [UInt8]? {
        read(shared).nonce
    }
}

/// One identity's `SharedDPoPNonce`s, by upstream origin (`scheme://authority` as its proofs' `htu`
/// begin): a server keeps one nonce per client (and may per key), so an identity's nonce for one
/// origin is every route's to that origin. Looked up when a configuration's routes are planned,
/// never per request.
public final class UpstreamDPoPNonces: Sendable {
    private let byOrigin = Locked<[[UInt8]: SharedDPoPNonce]>([:])

    public init() {}

    /// The slot of `origin`, made on first use.
    public func nonce(for origin: [UInt8]) -> SharedDPoPNonce {
        byOrigin.withLock { slots in
            if let slot = slots[origin] { return slot }
            let slot = SharedDPoPNonce()
            slots[origin] = slot
            return slot
        }
    }

    /// A configuration's routes were planned: only the origins they name keep their slots (a
    /// plan still in use keeps its own until it goes), so the table does not grow with reloads.
    public func keepOnly(origins inForce: Set<[UInt8]>) {
        byOrigin.withLock { slots in slots = slots.filter { inForce.contains($0.key) } }
    }

    /// How many origins have a slot.
    public var count: Int { byOrigin.withLock { $0.count } }
}
