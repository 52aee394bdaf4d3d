import ByteBuffers
import HTTP1

/// What a client connection needs only while a request is under way: the state of its exchange,
/// the request parser (which holds the head it collected) and the buffers for pipelined bytes,
/// the heads it writes, and the request it may send again. A worker lends one to a connection
/// when a request's first bytes arrive and takes it back when the connection goes idle
/// (`WorkspacePool`; unless a burst ends, a connection keeps its own for half a second in case its
/// next request comes: WorkspaceSweep.swift), so an idle keep-alive connection holds none of it —
/// nginx frees a keep-alive connection's buffers for the same reason, and h2o pools them per loop. A busy
/// connection keeps its workspace, so the capacity its buffers grew to serves its next requests
/// without allocating.
final class ExchangeWorkspace {
    let parser: HTTP1Parser
    /// The state of the connection's request under way (`Exchange.current`). Lent as the last
    /// exchange left it, finished (a head replaces it whole, and nothing decided before one
    /// depends on it: a request rejected or timed out before its head starts from a blank one),
    /// or blank after a connection that closed mid-exchange (`ClientConnection.returnWorkspace`).
    /// Not reset on the way back otherwise: that was ~100 instructions per request.
    let current = CurrentExchangeSlot()
    /// Bytes received after the request being handled (pipelined), not parsed yet.
    var leftover = ByteBuffer()
    /// What `parseLeftover` is parsing from `leftover`.
    var parsing = ByteBuffer()
    /// Scratch for composing heads and chunk lines.
    var scratch = ByteBuffer()
    /// The response on its way to the client, held as far as it came in the upstream read that
    /// carried its head (`ResponseRelay`, `HeldResponse`).
    var response = ResponseRelay()
    /// The request head as sent upstream, kept to send again on a fresh connection when a
    /// reused one turns out closed (only for requests without a body).
    var replayableHead = ByteBuffer()
    /// The request body as sent upstream, for a replay with a new token (`CurrentExchange.BodyReplay`).
    var replayBody = ByteBuffer()
    /// The version of the upstream's shared DPoP nonce in force as the proof in the head sent
    /// upstream was made (`WorkerProofs.withProof`; the nonce it carried, but for a replay after a
    /// `use_dpop_nonce` answer): a nonce in its answer is learnt only over that version.
    var dpopNonceVersion: UInt64 = 0
    var normalizedPath: [UInt8] = []
    var rewrittenTarget: [UInt8] = []
    var targetScratch = RoutePlan.TargetScratch()

    init(limits: HeaderLimits) {
        parser = HTTP1Parser(kind: .request, limits: limits)
    }

    /// Ready for another connection: the parser forgets the last one, and buffers that grew past
    /// `keptCapacity` (a large pipelined burst or request body) are freed.
    func reset(keptCapacity: Int) {
        parser.delegate = nil
        parser.reset()
        func empty(_ buffer: inout ByteBuffer) {
            buffer.clear()
            buffer.shrink(ifLargerThan: keptCapacity)
        }
        empty(&leftover)
        empty(&parsing)
        empty(&scratch)
        response.reset(keptCapacity: keptCapacity)
        empty(&replayableHead)
        empty(&replayBody)
        dpopNonceVersion = 0
        if normalizedPath.capacity > keptCapacity { normalizedPath = [] }
        if rewrittenTarget.capacity > keptCapacity { rewrittenTarget = [] }
    }
}

/// One worker's spare workspaces, lent to its client connections while they have a request under
/// way. Most recently returned first: its memory is still warm in the cache.
final class WorkspacePool {
    private var spare: [ExchangeWorkspace] = []
    /// Workspaces lent and not taken back yet.
    private(set) var lentCount = 0
    /// What the exchange of a connection without a workspace reads as its current state: blank,
    /// never written (`Exchange.init(blank:)`).
    let blank = CurrentExchangeSlot()
    /// Spare workspaces kept; more are freed (a burst of busy connections does not pin memory).
    static let maxSpare = 128
    /// Spare workspaces kept once a burst is over (`trimAfterBurst`): a steady load with this many
    /// requests at once per worker still allocates none.
    static let sparesAfterBurst = 16
    /// Buffer capacity a returned workspace keeps; larger buffers are freed.
    static let keptCapacity = 16 * 1024
    /// Hears of each workspace freed because `maxSpare` were kept already: only a burst does that.
    /// Weak: it holds this pool.
    weak var release: (any BurstReleasing)?

    /// A workspace for a connection, its parser set to `limits` and reporting to `delegate`
    /// (the connection owns the workspace until it gives it back). Nil: the caller sets the
    /// parser's delegate itself (`ClientConnection.work` does, to spare a retain per request).
    func lend(to delegate: (any HTTP1ParserDelegate)?, limits: HeaderLimits) -> ExchangeWorkspace {
        lentCount += 1
        let workspace = spare.popLast() ?? ExchangeWorkspace(limits: limits)
        workspace.parser.limits = limits
        workspace.parser.delegate = delegate
        return workspace
    }

    func takeBack(_ workspace: ExchangeWorkspace) {
        lentCount -= 1
        workspace.reset(keptCapacity: Self.keptCapacity)
        if spare.count < Self.maxSpare {
            spare.append(workspace)
        } else {
            release?.poolFreed()
        }
    }

    /// A burst is over: spare workspaces beyond `sparesAfterBurst` are freed, the least recently
    /// returned first.
    func trimAfterBurst() {
        let surplus = spare.count - Self.sparesAfterBurst
        if surplus > 0 { spare.removeFirst(surplus) }
    }

    var spareCount: Int { spare.count }
}
