/// The cache index of each identity a reload starts: the smallest indexes the identities it keeps
/// do not hold. A worker's table of injected tokens (WorkerTokens) is an array indexed by it, so
/// the table is never longer than the most identities in force at once, however many reloads
/// added and removed identities (a kept identity keeps its index: the table shrinks to the
/// highest index in force). A slot (`IdentityTokens.slot`) is never reused; a cache index is, once the
/// identity that held it is gone: a worker that still looks up the retired identity (a request
/// under the settings before the reload) shares the index with its successor, and tells the two
/// apart by the slot its cached token names.
enum CacheIndexes {
    /// `count` indexes for new identities, none of them in `taken`, smallest first.
    static func free(count: Int, taken: Set<Int>) -> [Int] {
        var indexes: [Int] = []
        indexes.reserveCapacity(count)
        var candidate = 0
        while indexes.count < count {
            if !taken.contains(candidate) { indexes.append(candidate) }
            candidate += 1
        }
        return indexes
    }
}
