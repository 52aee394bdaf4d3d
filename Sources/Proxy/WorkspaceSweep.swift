// WorkspaceSweep: which idle keep-alive connections keep their workspace, and until when.
//
// Lending a connection a workspace (ExchangeWorkspace.swift) at each request's first bytes and
// taking it back once its response was out cost about 440 instructions a request (callgrind,
// 2026-11-28: the parser and buffers reset, the exchange's state switched to the blank one and
// back, the pool's array, a few retains; keeping it, with the checks below, saves some 340). So a
// connection that goes idle keeps its workspace for its next request, but only for a while, and
// not in a burst:
//
// - A timer of the worker passes every `intervalMilliseconds` while a connection keeps one, and
//   takes back the workspace of each that stayed idle through a whole pass (a second chance, as
//   in a clock page replacement): a workspace goes back one to two intervals after its
//   connection's last request. Idle connections hold none, as before (their memory is the
//   relay's memory per connection, issue 25).
// - A connection keeps its workspace only while its worker has at most `maxLent` lent (busy or
//   kept), no more than its pool would keep as spares, and no burst is ending (its pools freed
//   what they could not keep, and the trim that follows has not come: `BurstMemoryReturn`). In a
//   burst the connections give theirs back as their exchanges end, as before, for its later
//   requests to take, and what the burst allocated is freed before the trim. Measured with
//   test_idle_memory.py (2,000 connections, 2026-11-28), bytes per idle connection after the
//   burst: 1,008-1,026 so, 995-1,030 before any was kept; 1,126-1,163 kept by every connection
//   that went idle; 1,038-1,094 with at most 16 or 128 lent, the burst's last ones keeping theirs.
//
// Only the connection that holds a workspace uses it, and a head replaces the last request's
// state whole (`Exchange.headParsed`), as with one lent from the pool.

import EventLoop

/// The worker's side: whether an idle connection keeps its workspace, and the timer.
final class WorkspaceSweep {
    /// Between two passes. Well under `BurstRelease.settleMilliseconds`: what a burst's last
    /// connections kept is back in the pool before the trim that follows the burst.
    static let intervalMilliseconds: UInt64 = 250
    /// Workspaces a worker has lent (busy or kept) beyond which an idle connection keeps none:
    /// as many as its pool keeps spare.
    static let maxLent = WorkspacePool.maxSpare
    /// Idle connections that keep their workspace now.
    private(set) var kept = 0
    /// A `DeadlineTimer`: no libuv handle of its own, and nothing to do while none is kept.
    private let timer: DeadlineTimer
    private var isArmed = false
    /// Sweeps the worker's connections (`ClientConnection.sweepWorkspace`).
    private var pass: () -> Void = {}

    init(loop: EventLoop) {
        timer = DeadlineTimer(loop: loop)
        // Weak: the loop's queue holds an armed timer, and may fire it after the worker is gone.
        timer.whenExpired { [weak self] in self?.timerFired() }
    }

    /// What a pass does: set once by the worker, whose connections it sweeps.
    func whenDue(_ body: @escaping () -> Void) {
        pass = body
    }

    /// A connection went idle with its workspace, its worker having `lent` workspaces (and a
    /// burst `ending` or not): true when it may keep it (then a pass will come for it).
    func keep(lent: Int, burstEnding: Bool) -> Bool {
        guard lent <= Self.maxLent, !burstEnding else { return false }
        kept += 1
        if !isArmed {
            isArmed = true
            timer.arm(afterMilliseconds: Self.intervalMilliseconds)
        }
        return true
    }

    /// A kept workspace is in use again, or went back to the pool.
    func release() {
        kept -= 1
    }

    private func timerFired() {
        isArmed = false
        pass()
        if kept > 0 {
            isArmed = true
            timer.arm(afterMilliseconds: Self.intervalMilliseconds)
        }
    }

    func close() {
        timer.close()
    }
}

extension ClientConnection {
    /// Whether an idle connection keeps its workspace (`WorkspaceSweep`).
    enum KeptWorkspace: UInt8 {
        case none
        /// Kept since the last pass of the sweep.
        case kept
        /// Kept through a whole pass: the next one takes it back.
        case keptThroughPass
    }

    /// A connection that is idle keeps its workspace if its worker's sweep lets it, or gives
    /// it back (once nothing of a request is left: no exchange, no pipelined bytes, no held
    /// response, no upstream connection). Keeping needs no more than the phase: the sweep asks
    /// the rest before it takes a kept workspace back.
    func keepOrReturnWorkspaceIfIdle() {
        guard keptWorkspace == .none, exchange.phase == .awaitingRequest, workspace != nil else { return }
        if worker.workspaceSweep.keep(lent: worker.workspaces.lentCount, burstEnding: worker.burstMemory.burstEnding) {
            keptWorkspace = .kept
        } else if let workspace, isDone(with: workspace) {
            giveBack(workspace)
        }
    }

    /// Bytes came: a kept workspace serves the request they start.
    @inline(__always)
    func useKeptWorkspace() {
        guard keptWorkspace != .none else { return }
        keptWorkspace = .none
        worker.workspaceSweep.release()
    }

    /// A pass of the worker's sweep: a workspace kept through the last pass goes back.
    func sweepWorkspace() {
        switch keptWorkspace {
        case .none:
            return
        case .kept:
            keptWorkspace = .keptThroughPass
        case .keptThroughPass:
            guard let workspace, isDone(with: workspace) else { return useKeptWorkspace() }
            giveBack(workspace)
        }
    }

    private func isDone(with workspace: ExchangeWorkspace) -> Bool {
        exchange.phase == .awaitingRequest && workspace.leftover.isEmpty && !parserPaused && !workspace.response.isHolding
            && upstreamLeg?.isConnected != true
    }
}
