import Crypto

/// The DPoP proofs accepted recently, so that a second use of one is refused (RFC 9449 §11.1):
/// each is kept until its window has passed (`DPoPAcceptedProof.acceptedUntil`), after which
/// `DPoPProofCheck` refuses it as too old anyway.
///
/// A proof is remembered by the SHA-256 of its key's thumbprint and its `jti`, never by the
/// `jti` itself: 32 bytes each whatever the `jti`'s length, and one client's `jti` cannot collide
/// with another's key. Proofs leave in the order their windows end (a heap), so admitting one
/// costs O(log n) and never a sweep of the whole memory.
///
/// Bounded by `capacity`. When full of proofs still inside their windows, a new proof is
/// refused (`.full`) rather than an unexpired one forgotten: forgetting would let that one be
/// replayed, which is what the memory exists to stop, while refusing costs a caller one retry
/// (and the caller can answer 503 with `Retry-After` of about the window). Size it at the
/// highest rate of DPoP requests expected times the window (the default, 100,000 proofs, holds
/// 60 s at about 1,600 requests/s, in about 13 MB: measured).
///
/// Pure and not thread-safe: one instance for every worker, behind the caller's lock (a replay
/// may reach another worker than the first use did).
public struct ProofReplayMemory: Sendable {
    public enum Answer: Sendable, Equatable {
        /// Not seen before: remembered now, until its window ends.
        case fresh
        /// Seen before within its window: refuse it (`DPoPProofRefusal.replayed`).
        case replayed
        /// Full of proofs still inside their windows: refuse it, remembering nothing.
        case full
    }

    public static let defaultCapacity = 100_000

    public let capacity: Int
    /// Each remembered proof's digest.
    private var remembered: Set<ProofDigest> = []
    /// The same proofs by the end of their windows, soonest first (a binary min-heap).
    private var endings: [(end: Int64, digest: ProofDigest)] = []

    public init(capacity: Int = defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// How many proofs are remembered (some may have passed their window: they go at the next
    /// `admit`).
    public var count: Int { remembered.count }

    /// Forgets the proofs whose window ended before `now`, then says whether `proof` was seen
    /// before, remembering it if it was not and there is room.
    public mutating func admit(_ proof: DPoPAcceptedProof, now: Int64) -> Answer {
        forgetEnded(before: now)
        let digest = ProofDigest(keyThumbprint: proof.keyThumbprint, jti: proof.jti)
        guard !remembered.contains(digest) else { return .replayed }
        guard remembered.count < capacity else { return .full }
        // A proof whose window already ended is refused by the check; were one admitted, it is
        // kept until the next admit.
        remembered.insert(digest)
        push(end: proof.acceptedUntil, digest: digest)
        return .fresh
    }

    private mutating func forgetEnded(before now: Int64) {
        while let first = endings.first, first.end < now {
            remembered.remove(first.digest)
            popFirst()
        }
    }

    private mutating func push(end: Int64, digest: ProofDigest) {
        endings.append((end, digest))
        var child = endings.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard endings[child].end < endings[parent].end else { break }
            endings.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popFirst() {
        let last = endings.removeLast()
        guard !endings.isEmpty else { return }
        endings[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < endings.count && endings[left].end < endings[smallest].end { smallest = left }
            if right < endings.count && endings[right].end < endings[smallest].end { smallest = right }
            guard smallest != parent else { return }
            endings.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// The SHA-256 of a proof's key thumbprint and `jti` (a zero byte between them: neither holds
/// one), as four words.
struct ProofDigest: Hashable, Sendable {
    let words: (UInt64, UInt64, UInt64, UInt64)

    init(keyThumbprint: String, jti: String) {
        let digest = SHA256.hash(Array(keyThumbprint.utf8) + [0] + Array(jti.utf8))
        func word(_ index: Int) -> UInt64 {
            digest[index * 8..<index * 8 + 8].reduce(0) { $0 << 8 | UInt64($1) }
        }
        words = (word(0), word(1), word(2), word(3))
    }

    static func == (lhs: ProofDigest, rhs: ProofDigest) -> Bool {
        lhs.words == rhs.words
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}
