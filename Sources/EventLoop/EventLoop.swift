// EventLoop: a thin Swift wrapper over libuv — one loop per worker thread.
//
// Lifetime rules for every handle wrapper in this module (TCPStream, TCPListener, LoopTimer,
// LoopWakeup, SignalWatcher — all subclasses of `LoopHandle`, which implements rules 1–3 once):
//
//  1. A wrapper allocates its own uv handle and stores an unretained pointer to itself in
//     `handle->data`, so C callbacks (non-capturing closures) recover it with `Unmanaged`.
//  2. While the handle is open the wrapper holds a strong reference to itself. Dropping every
//     Swift reference therefore never frees a handle libuv still knows about.
//  3. `close()` calls `uv_close`; the close callback frees the uv memory, decrements the loop's
//     `openHandles` counter and drops the self-reference. Nothing is freed before that callback.
//     `close()` is idempotent.
//  4. Every method runs on the loop's thread. The only exception is `LoopWakeup.wake()`, which is
//     `uv_async_send` and safe from any thread.
//  5. Reads land in one buffer per loop (`readBuffer`), valid only during the read callback:
//     a delegate that wants to keep bytes copies them. No allocation per read.
//  6. Writes issued while a read callback runs are gathered per stream and sent when the
//     callback returns (`batchedStreams`): a response head, its body and chunk framing produced
//     by one read leave in one system call. A large write (a body's read-sized piece,
//     `TCPStream.uncopiedWriteMinimum`) goes out at once with what was gathered before it, in
//     one `writev`, rather than be copied into the batch.
//
// Tests close everything and assert `openHandles == 0` and that `close()` of the loop succeeds
// (`uv_loop_close` returns 0 only when no handle is left), so each test is also a leak check.

internal import CLibUV
import ByteBuffers

public final class EventLoop {
    let uv: UnsafeMutablePointer<uv_loop_t>
    /// Handles opened on this loop and not yet through their close callback.
    public internal(set) var openHandles = 0
    /// Shared by every stream of the loop; see rule 5.
    let readBuffer: UnsafeMutableRawPointer
    static let readBufferSize = 64 * 1024
    private var closed = false
    /// Streams written to during the current read callback, flushed when it returns (rule 6).
    /// Unretained: a stream is listed only while open (`write` refuses a closed one), so its
    /// handle holds it (rule 2) until libuv's close callback, which runs from `uv_run`'s close
    /// phase, never inside the callback that lists and flushes it. Retaining would cost a
    /// retain and a release per batched write and another pair per flush.
    var batchedStreams = UnretainedList<TCPStream>()
    var isBatchingWrites = false
    /// The pipe for splicing between sockets (SpliceRelay.swift), made on first use.
    var splicePipeStorage: SplicePipe?
    /// The `DeadlineTimer`s of this loop, behind one libuv timer.
    lazy var deadlines = DeadlineQueue(loop: self)
    /// Storage for the write backlogs of this loop's streams, lent while bytes wait.
    public let buffers = BufferPool()
    /// The 64 KiB spaces a TLS stream decrypts one read into, lent for the call (`TLSStream`):
    /// apart from `buffers`, so a small write backlog is never lent a 64 KiB block, and a TLS
    /// read never frees and allocates because a backlog holds the large one. Two kept at most
    /// (a read inside a read is the deepest the delivery nests).
    public let plaintextSpaces = BufferPool(maxSpare: 2)
    /// The splice advisors of this loop's streams (`TCPStream.spliceAdvisor`), by stream: only
    /// streams moving a large plain body have one.
    var spliceAdvisors: [ObjectIdentifier: any SpliceAdvisor] = [:]

    public init() throws(UVError) {
        uv = .allocate(capacity: 1)
        let rc = uv_loop_init(uv)
        guard rc == 0 else {
            uv.deallocate()
            throw UVError(rc)
        }
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
    }

    /// Runs `body` (a read callback) with writes batched, then sends what it wrote.
    @inline(__always)
    func batchingWrites(_ body: () -> Void) {
        if isBatchingWrites {
            body()
            return
        }
        isBatchingWrites = true
        body()
        isBatchingWrites = false
        // A flush can run a delegate (drain), which may write again: not batched any more, so
        // such a write goes out directly. The count is read anew each time all the same: a
        // stream listed during the flush (by a batch nested in it, which flushes the whole list
        // and empties it, ending this loop) is never left behind.
        var index = 0
        while index < batchedStreams.count {
            batchedStreams[index]._withUnsafeGuaranteedRef { $0.flushBatchedWrites() }
            index += 1
        }
        batchedStreams.removeAll()
    }

    /// Runs until no handle is active (or `stop()` is called).
    public func run() {
        uv_run(uv, UV_RUN_DEFAULT)
    }

    /// Runs callbacks that are ready without waiting; for tests that step a loop.
    public func runOnce(wait: Bool) {
        uv_run(uv, wait ? UV_RUN_ONCE : UV_RUN_NOWAIT)
    }

    public func stop() {
        uv_stop(uv)
    }

    /// Milliseconds since an arbitrary point, cached by libuv at the start of each loop iteration.
    public var nowMilliseconds: UInt64 { uv_now(uv) }

    /// Releases the loop. Fails with `EBUSY` while any handle is still open: the leak check.
    public func close() throws(UVError) {
        guard !closed else { return }
        // Give close callbacks that are already queued a chance to run.
        uv_run(uv, UV_RUN_NOWAIT)
        let rc = uv_loop_close(uv)
        guard rc == 0 else { throw UVError(rc) }
        closed = true
    }

    deinit {
        if !closed { _ = uv_loop_close(uv) }
        uv.deallocate()
        readBuffer.deallocate()
    }
}

/// The bookkeeping every handle wrapper shares (rules 1–3): allocate the uv handle, point its
/// `data` at the wrapper and keep the wrapper alive while it is open, count it on the loop, and
/// free everything in the close callback. Subclasses add what their handle does.
/// (Not generic over the handle type: a public subclass may not name libuv's types, which stay
/// behind `internal import`.)
public class LoopHandle {
    public let loop: EventLoop
    /// The uv handle's memory; each subclass views it as its own handle type.
    let storage: UnsafeMutableRawPointer
    public private(set) var isClosed = false

    /// Allocates a `Handle`; the subclass then initialises it with its `uv_*_init` and calls
    /// `didOpen()`, or `abandon()` when the init failed.
    init<Handle>(loop: EventLoop, handleType: Handle.Type) {
        self.loop = loop
        storage = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<Handle>.size,
                                                   alignment: MemoryLayout<Handle>.alignment)
        storage.bindMemory(to: Handle.self, capacity: 1)
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { storage.assumingMemoryBound(to: uv_handle_t.self) }

    /// The handle is initialised: libuv knows it, so from now on it is freed by the close callback.
    func didOpen() {
        uvHandle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.openHandles += 1
    }

    /// The uv init failed: libuv never knew the handle.
    func abandon() {
        isClosed = true
        storage.deallocate()
    }

    /// Idempotent. Subclasses drop their callbacks in `willClose()`.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        willClose()
        uv_close(uvHandle) { handle in
            let owner = Unmanaged<LoopHandle>.fromOpaque(handle!.pointee.data!)
            owner.takeUnretainedValue().handleDidClose()
            owner.release()
        }
    }

    func willClose() {}

    /// Called from the close callback; subclasses that override call `super` last.
    func handleDidClose() {
        loop.openHandles -= 1
        storage.deallocate()
    }
}

extension EventLoop {
    /// A monotonic clock in nanoseconds (`uv_hrtime`), usable from any thread.
    public static func monotonicNanoseconds() -> UInt64 { uv_hrtime() }
}
