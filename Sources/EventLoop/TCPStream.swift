internal import CLibUV
import ByteBuffers

/// A connected byte stream on one loop: plain TCP (`TCPStream`) or TLS over TCP. The proxy's
/// upstream side and the HTTP client work with either.
public protocol ByteStream: AnyObject {
    var delegate: (any ByteStreamDelegate)? { get set }
    var loop: EventLoop { get }
    var isClosed: Bool { get }
    /// Bytes accepted by `write` and not yet handed to the kernel.
    var queuedBytes: Int { get }
    var isAboveHighWater: Bool { get }
    func startReading()
    func stopReading()
    /// Sends `bytes` (for TLS: as plaintext), copying what cannot go out at once. Never blocks.
    func write(_ bytes: UnsafeRawBufferPointer)
    /// Flushes, ends the stream (FIN, or close_notify then FIN), and closes after a linger.
    func closeAfterWrites(lingerMilliseconds: UInt64, stallMilliseconds: UInt64)
    /// As `closeAfterWrites()`, for a peer that asked for the close and has nothing more to
    /// send: once the writes are flushed, a `TCPStream` closes at once if nothing of the peer's
    /// arrived, and lingers as `closeAfterWrites()` does if something did. Other streams linger.
    func closeAfterWritesUnlessPeerSends()
    /// Closes now; queued writes are dropped. Idempotent.
    func close()
    func peerAddress() -> SocketAddress?
    /// Why a security layer under the stream (TLS) failed, in words safe to show a client; nil
    /// for plain TCP and while nothing failed. The UVError-typed callbacks cannot say it.
    var failureReason: String? { get }
    /// The transport is up but its security handshake is still going on (for TLS: what a
    /// connect timeout interrupted, a TLS failure rather than a slow network); false for TCP.
    var isHandshaking: Bool { get }
}

extension ByteStream {
    public func closeAfterWrites() {
        closeAfterWrites(lingerMilliseconds: 2000, stallMilliseconds: 60_000)
    }

    /// Lingers (TLS: the peer may answer close_notify with its own).
    public func closeAfterWritesUnlessPeerSends() {
        closeAfterWrites()
    }

    public func write(_ buffer: borrowing ByteBuffer) {
        write(buffer.readableBytes)
    }

    /// Calls `call` with the stream at `object`, an instance of this type, without retaining it:
    /// for an owner that calls its stream through its address and type, where the call cannot
    /// end the stream's life (`UpstreamConnection.withStream` says why its calls cannot).
    @inlinable
    package static func withUnretained<Result>(_ object: UnsafeMutableRawPointer, _ call: (any ByteStream) -> Result) -> Result {
        Unmanaged<Self>.fromOpaque(object)._withUnsafeGuaranteedRef { call($0) }
    }
}

/// What a byte stream reports to its owner. All calls happen on the loop's thread.
public protocol ByteStreamDelegate: AnyObject {
    /// Bytes arrived; they live in the loop's read buffer and are valid only during this call.
    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer)
    /// The peer closed its side (`error == nil`) or the connection failed. Reading has stopped;
    /// the owner decides when to `close()`.
    func stream(_ stream: any ByteStream, didEndWith error: UVError?)
    /// A connect started with `connect(to:)` finished.
    func stream(_ stream: any ByteStream, didConnectWith error: UVError?)
    /// The write backlog fell back below `lowWaterMark` after having passed `highWaterMark`.
    func streamDidDrain(_ stream: any ByteStream)
    /// The handle is closed (after `close()` or a lingering close); the last call a delegate gets.
    func streamDidClose(_ stream: any ByteStream)
    /// The socket of a stream that `reportsReadiness` is readable, and nothing was read: the
    /// delegate receives with `receive(into:)`. Writes it makes are batched, as in `didRead`.
    func streamIsReadable(_ stream: TCPStream)
}

extension ByteStreamDelegate {
    public func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {}
    public func streamDidDrain(_ stream: any ByteStream) {}
    public func streamDidClose(_ stream: any ByteStream) {}
    /// Reads and delivers as libuv would have (for a delegate that does not receive itself).
    public func streamIsReadable(_ stream: TCPStream) { stream.readDirectly() }
}

/// A TCP connection on one loop: reads into the loop's buffer, writes through a double buffer
/// (one `uv_write_t` in flight, later bytes gathered behind it), with a high-water mark so
/// the owner can stop reading from the other side of a proxy until this side drains.
///
/// An idle stream holds no write buffer and no write request: most writes go out whole at once
/// (`uv_try_write`), so the buffers' storage is borrowed from the loop's `BufferPool` only while
/// bytes wait, and the `uv_write_t` exists only while a write is in flight.
public final class TCPStream: LoopHandle, ByteStream {
    var handle: UnsafeMutablePointer<uv_tcp_t> { storage.assumingMemoryBound(to: uv_tcp_t.self) }

    // The flags come first: Swift lays stored properties out in the order written, and these
    // fill the bytes after `LoopHandle`'s `isClosed`, which the pointers below would leave as
    // padding (every client connection holds a stream).
    private var writing = false
    private var aboveHighWater = false
    private var connected: Bool
    private var reading = false
    private var shutdownAfterWrites = false
    private(set) var lingering = false
    /// `finishWriting`: FIN once the queue is empty, reading goes on.
    private var finishingWrites = false

    /// The write in flight's request; nil when none is.
    private var writeRequest: UnsafeMutablePointer<uv_write_t>?
    private var connectRequest: UnsafeMutablePointer<uv_connect_t>?
    private var shutdownRequest: UnsafeMutablePointer<uv_shutdown_t>?
    private var lingerTimer: LoopTimer?

    /// Strong on purpose: the owner holds the stream, the stream holds the owner, and the cycle
    /// is broken in `handleDidClose` (rule 3 of EventLoop.swift). Each call to it is made on a
    /// strong copy taken for the call (`deliverRead` and the like), so a delegate lives to the end
    /// of its callback even when the callback replaces it: the delegates that call their parsers
    /// and owners without a retain (`UpstreamConnection`, `HTTP1ParserDelegate`) rely on it.
    public var delegate: (any ByteStreamDelegate)?
    /// Set: readable bytes may bypass user space (SpliceRelay.swift). Strong, like `delegate`,
    /// and dropped with it in `handleDidClose`. Kept in the loop's table, not in the stream
    /// (whose flag `splices` says it has one): every client connection holds a stream, and the
    /// existential's two words would take it past 160 bytes of heap.
    public var spliceAdvisor: (any SpliceAdvisor)? {
        get { splices ? loop.spliceAdvisors[ObjectIdentifier(self)] : nil }
        set {
            guard newValue != nil || splices else { return }
            loop.spliceAdvisors[ObjectIdentifier(self)] = newValue
            splices = newValue != nil
        }
    }

    /// Bytes waiting behind the write in flight.
    private var pending = ByteBuffer()
    /// Bytes handed to libuv by the write in flight; untouched until its callback.
    private var inFlight = ByteBuffer()
    /// Listed in the loop's batch, waiting for `flushBatchedWrites`.
    private var batched = false
    /// `spliceAdvisor` is set: reads are readiness reports (in the padding after `batched`).
    fileprivate var splices = false
    /// Set: libuv does not read the socket, it only reports it readable, to the delegate
    /// (`streamIsReadable`), which receives itself (`receive(into:)`): a TLS stream lets
    /// OpenSSL receive into its record buffer, so ciphertext is not copied from the loop's
    /// read buffer. During a lingering close the stream reads and discards as usual.
    public var reportsReadiness = false
    /// `closeAfterWritesUnlessPeerSends`: no linger if the peer sends nothing (in the byte of
    /// padding after the flags above).
    private var closesUnlessPeerSends = false
    /// `closeAfterWrites`' times, kept in 32 bits (49 days) to keep the stream within 160 bytes
    /// of heap (malloc's size class below 176), as the flags above do.
    private var lingerMilliseconds: UInt32 = 0
    private var stallMilliseconds: UInt32 = 0

    public static let highWaterMark = 256 * 1024
    /// A write this large, issued during a read callback, goes to the kernel at once with what
    /// the batch gathered before it (`writeGathered`) instead of being copied into the batch:
    /// a body's read-sized piece (up to 64 KiB). The copy cost about one instruction per byte
    /// (callgrind: 95% of the relay's user-space instructions for an upload); the batch saves
    /// one small `write(2)` at most, for what follows in the same callback (chunk framing).
    static let uncopiedWriteMinimum = 16 * 1024
    public static let lowWaterMark = 64 * 1024

    /// Bytes accepted by `write` and not yet handed to the kernel.
    public var queuedBytes: Int { pending.count + inFlight.count }
    public var isAboveHighWater: Bool { queuedBytes > Self.highWaterMark }
    public var isReading: Bool { reading }
    /// Bytes of write-buffer storage and write requests this stream holds (none while idle).
    var heldWriteMemory: Int {
        pending.capacity + inFlight.capacity + (writeRequest == nil ? 0 : MemoryLayout<uv_write_t>.size)
    }

    private init(loop: EventLoop, connected: Bool) throws(UVError) {
        self.connected = connected
        super.init(loop: loop, handleType: uv_tcp_t.self)
        let rc = uv_tcp_init(loop.uv, handle)
        guard rc == 0 else {
            abandon()
            throw UVError(rc)
        }
        didOpen()
        uv_tcp_nodelay(handle, 1)
    }

    /// Wraps a connection accepted by `listener` (see `TCPListener`).
    static func accept(on loop: EventLoop, from server: UnsafeMutablePointer<uv_stream_t>) throws(UVError) -> TCPStream {
        let stream = try TCPStream(loop: loop, connected: true)
        let rc = uv_accept(server, stream.streamHandle)
        if rc < 0 {
            stream.close()
            throw UVError(rc)
        }
        return stream
    }

    /// Starts connecting; the delegate hears `didConnectWith`. Writes issued before the connect
    /// completes are queued and sent once it does. With `keepAlive`, the socket probes an idle
    /// peer (best effort: an option the system refuses leaves the connection without).
    public static func connect(on loop: EventLoop, to address: SocketAddress, keepAlive: TCPKeepAlive? = nil,
                               delegate: any ByteStreamDelegate) throws(UVError) -> TCPStream {
        let stream = try TCPStream(loop: loop, connected: false)
        stream.delegate = delegate
        let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        request.pointee.data = stream.handle.pointee.data
        stream.connectRequest = request
        let rc = address.withSockaddr { uv_tcp_connect(request, stream.handle, $0, onConnect) }
        if rc < 0 {
            stream.connectRequest = nil
            request.deallocate()
            stream.close()
            throw UVError(rc)
        }
        // The socket exists once the connect started (set earlier, libuv would use its own delay).
        if let keepAlive { _ = stream.enableKeepAlive(keepAlive) }
        return stream
    }

    var streamHandle: UnsafeMutablePointer<uv_stream_t> { UnsafeMutablePointer(OpaquePointer(handle)) }

    public func peerAddress() -> SocketAddress? {
        SocketAddress.read { uv_tcp_getpeername(handle, $0, $1) }
    }

    /// Plain TCP has no security layer to fail: its errors are the UVErrors it reports.
    public var failureReason: String? { nil }
    public var isHandshaking: Bool { false }

    // MARK: Reading

    public func startReading() {
        guard !reading, !isClosed, connected else { return }
        reading = uv_read_start(streamHandle, allocateReadBuffer, onRead) == 0
    }

    public func stopReading() {
        guard reading else { return }
        uv_read_stop(streamHandle)
        reading = false
    }

    fileprivate func didRead(_ count: Int) {
        if count == Int(UV_ENOBUFS.rawValue) {
            if let spliceAdvisor {
                readableWithoutRead(advisor: spliceAdvisor)
                return
            }
            if reportsReadiness {
                if lingering {
                    readDirectly()
                } else {
                    loop.batchingWrites { delegate?.streamIsReadable(self) }
                }
                return
            }
        }
        deliverRead(count)
    }

    func deliverRead(_ count: Int) {
        if count > 0 {
            let bytes = UnsafeRawBufferPointer(start: loop.readBuffer, count: count)
            if lingering {
                // The peer sent more after all: it gets its linger.
                closesUnlessPeerSends = false
                return
            }
            loop.batchingWrites { delegate?.stream(self, didRead: bytes) }
        } else if count < 0 {
            stopReading()
            let error = count == Int(UV_EOF.rawValue) ? nil : UVError(Int32(count))
            if lingering {
                // The peer ended its side (a client may half-close after its request): what is
                // queued still goes, and `beginShutdown` closes once it is out.
                if error == nil && queuedBytes > 0 { return }
                close()
                return
            }
            delegate?.stream(self, didEndWith: error)
        }
    }

    // MARK: Writing

    /// Open, connected and not ending: a write now goes out after what was queued before.
    var isWritable: Bool { connected && !isClosed && !shutdownAfterWrites && !finishingWrites }

    /// Sends `bytes`, copying whatever the kernel does not take at once. Never blocks.
    /// During a read callback the bytes are gathered and sent when it returns (rule 6).
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard !isClosed, !shutdownAfterWrites, !finishingWrites, bytes.count > 0 else { return }
        if loop.isBatchingWrites {
            var rest = bytes
            if bytes.count >= Self.uncopiedWriteMinimum && connected && !writing && !aboveHighWater {
                rest = writeGathered(bytes)
                if rest.isEmpty { return }
            }
            if !batched {
                batched = true
                loop.batchedStreams.append(self)
            }
            pending.borrowStorage(from: loop.buffers)
            pending.append(rest)
            if queuedBytes > Self.highWaterMark { aboveHighWater = true }
            return
        }
        var rest = bytes
        if connected && !writing && pending.isEmpty {
            var buffer = uv_buf_t(base: UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: CChar.self)), len: bytes.count)
            let written = Int(uv_try_write(streamHandle, &buffer, 1))
            if written == bytes.count { return }
            if written > 0 {
                rest = UnsafeRawBufferPointer(rebasing: bytes[written...])
            }
            // On EAGAIN or an error the bytes go through uv_write, whose callback reports any
            // error later: `write` never calls the delegate from inside the caller's own code.
        }
        pending.borrowStorage(from: loop.buffers)
        pending.append(rest)
        // The same measure as `isAboveHighWater`, which owners check: when they see it true,
        // a drain notification must follow.
        if queuedBytes > Self.highWaterMark { aboveHighWater = true }
        startWriteIfIdle()
    }

    /// Sends what the batch gathered so far, then `bytes`, in one `writev(2)`, with no copy of
    /// `bytes`; returns the part of `bytes` the kernel did not take (`pending` keeps what it did
    /// not take of its own). Only while no write is in flight, so the order of bytes holds, and
    /// while the backlog is under its high-water mark, so no drain notification is owed.
    private func writeGathered(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let waiting = pending.count
        let written = withUnsafeTemporaryAllocation(of: uv_buf_t.self, capacity: 2) { buffers in
            var count: UInt32 = 0
            if waiting > 0 {
                buffers[0] = uv_buf_t(base: pending.baseAddress!.assumingMemoryBound(to: CChar.self), len: waiting)
                count = 1
            }
            buffers[Int(count)] = uv_buf_t(base: UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: CChar.self)),
                                           len: bytes.count)
            // On EAGAIN or an error nothing went: the bytes are queued, and uv_write reports an
            // error later.
            return max(0, Int(uv_try_write(streamHandle, buffers.baseAddress!, count + 1)))
        }
        if written < waiting {
            if written > 0 { pending.removeFirst(written) }
            return bytes
        }
        if waiting > 0 {
            pending.clear()
            if written - waiting == bytes.count { pending.returnStorage(to: loop.buffers) }
        }
        return UnsafeRawBufferPointer(rebasing: bytes[(written - waiting)...])
    }

    /// Sends what was gathered during a read callback: one `write(2)` when the kernel takes it.
    func flushBatchedWrites() {
        batched = false
        guard !isClosed, connected, !writing, !pending.isEmpty else { return }
        var buffer = uv_buf_t(base: pending.baseAddress!.assumingMemoryBound(to: CChar.self), len: pending.count)
        let written = Int(uv_try_write(streamHandle, &buffer, 1))
        if written == pending.count {
            pending.clear()
            withBufferPool { pending.returnStorage(to: $0) }
            queueDidShrink()
            return
        }
        if written > 0 { pending.removeFirst(written) }
        startWriteIfIdle()
    }

    /// The loop's `buffers` for one call, without the retain and release the compiler puts
    /// around a call through `loop.buffers` (one pair per read callback, in the batch flush):
    /// the stream holds its loop, which holds the pool in a `let`, so the pool outlives the call.
    @inline(__always)
    private func withBufferPool(_ body: (BufferPool) -> Void) {
        Unmanaged.passUnretained(loop.buffers)._withUnsafeGuaranteedRef(body)
    }

    private func startWriteIfIdle() {
        guard connected, !writing, !pending.isEmpty, !isClosed else { return }
        inFlight.swapStorage(with: &pending)
        var buffer = uv_buf_t(base: inFlight.baseAddress!.assumingMemoryBound(to: CChar.self), len: inFlight.count)
        let request = writeRequest ?? makeWriteRequest()
        let rc = uv_write(request, streamHandle, &buffer, 1, onWrite)
        if rc < 0 {
            // Only for a handle libuv considers unusable; closing reports it to the delegate.
            inFlight.clear()
            pending.clear()
            close()
            return
        }
        writing = true
        if queuedBytes > Self.highWaterMark { aboveHighWater = true }
    }

    private func makeWriteRequest() -> UnsafeMutablePointer<uv_write_t> {
        let request = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        request.pointee.data = handle.pointee.data
        writeRequest = request
        return request
    }

    fileprivate func didWrite(status: Int32) {
        writing = false
        inFlight.clear()
        guard !isClosed else { return }
        if status < 0 {
            failWrite(UVError(status))
            return
        }
        startWriteIfIdle()
        if !writing { releaseWriteResources() }
        // Progress: a closing stream's stall clock starts again.
        if shutdownAfterWrites && shutdownRequest == nil { lingerTimer?.start(afterMilliseconds: UInt64(stallMilliseconds)) }
        queueDidShrink()
    }

    private func queueDidShrink() {
        if aboveHighWater && queuedBytes <= Self.lowWaterMark {
            aboveHighWater = false
            delegate?.streamDidDrain(self)
        }
        if shutdownAfterWrites && queuedBytes == 0 { beginShutdown() }
        if finishingWrites && queuedBytes == 0 { sendFIN() }
    }

    private func failWrite(_ error: UVError) {
        pending.clear()
        stopReading()
        if shutdownAfterWrites || lingering { close(); return }
        delegate?.stream(self, didEndWith: error)
    }

    // MARK: Connecting

    fileprivate func didConnect(status: Int32) {
        if let request = connectRequest {
            request.deallocate()
            connectRequest = nil
        }
        guard !isClosed else { return }
        if status < 0 {
            delegate?.stream(self, didConnectWith: UVError(status))
            return
        }
        connected = true
        uv_tcp_nodelay(handle, 1)
        startWriteIfIdle()
        if finishingWrites && queuedBytes == 0 { sendFIN() }
        if shutdownAfterWrites && queuedBytes == 0 { beginShutdown() }
        delegate?.stream(self, didConnectWith: nil)
    }

    // MARK: Closing

    /// Flushes queued writes, sends FIN, then keeps reading and discarding what the peer still
    /// sends until it closes or `lingerMilliseconds` pass after the FIN, and closes. Closing at
    /// once could make the kernel answer the peer's unread bytes with a reset that destroys the
    /// response just written (the "lingering close" of nginx and Apache).
    /// A peer that stops reading altogether is given up on after `stallMilliseconds` without
    /// write progress.
    public func closeAfterWrites(lingerMilliseconds: UInt64 = 2000, stallMilliseconds: UInt64 = 60_000) {
        guard !isClosed, !shutdownAfterWrites else { return }
        shutdownAfterWrites = true
        lingering = true
        self.lingerMilliseconds = UInt32(clamping: lingerMilliseconds)
        self.stallMilliseconds = UInt32(clamping: stallMilliseconds)
        lingerTimer = LoopTimer(loop: loop) { [unowned self] in self.close() }
        lingerTimer?.start(afterMilliseconds: UInt64(stallMilliseconds))
        if connected && queuedBytes == 0 { beginShutdown() }
        // Otherwise the write in flight, or the batch flush, ends in `queueDidShrink`.
    }

    /// Closing without the linger spares the FIN's `shutdown(2)`, the wait for the peer's FIN,
    /// its read and a poll change: with `Connection: close` clients, about a sixth of the
    /// relay's CPU per request to an https upstream (nginx closes so too). The kernel sends the
    /// FIN after the response; only bytes the peer sent after all could meet a reset, and the
    /// owner decides when the peer has said it sends none (`Exchange.socketEnding`).
    public func closeAfterWritesUnlessPeerSends() {
        guard !isClosed, !shutdownAfterWrites else { return }
        closesUnlessPeerSends = true
        closeAfterWrites()
    }

    /// Half-closes: sends FIN once the queued bytes are written (on a stream still connecting,
    /// once connected), and keeps delivering what the peer sends until it ends too (a tunnel
    /// whose other side ended). What is written after it is dropped.
    public func finishWriting() {
        guard !isClosed, !shutdownAfterWrites, !finishingWrites else { return }
        finishingWrites = true
        if connected && queuedBytes == 0 { sendFIN() }
    }

    private func sendFIN() {
        guard shutdownRequest == nil, !isClosed else { return }
        let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        request.pointee.data = handle.pointee.data
        shutdownRequest = request
        if uv_shutdown(request, streamHandle, onShutdown) < 0 {
            shutdownRequest = nil
            request.deallocate()
            close()
        }
    }

    private func beginShutdown() {
        guard shutdownRequest == nil || finishingWrites, !isClosed else { return }
        if closesUnlessPeerSends && !finishingWrites && nothingWaitsToBeRead() {
            close()
            return
        }
        lingerTimer?.start(afterMilliseconds: UInt64(lingerMilliseconds))
        // After `finishWriting` the FIN is sent (or goes once the queue is empty): linger only.
        if finishingWrites {
            startReading()
            return
        }
        sendFIN()
        if !isClosed { startReading() }
    }

    fileprivate func didShutdown() {
        shutdownRequest?.deallocate()
        shutdownRequest = nil
    }

    // `close()` (from LoopHandle) closes now; queued writes are dropped.
    override func willClose() {
        reading = false
        lingerTimer?.close()
        lingerTimer = nil
    }

    /// Nothing waits to be written: the buffers' storage goes back to the loop, and the write
    /// request is freed.
    private func releaseWriteResources() {
        inFlight.returnStorage(to: loop.buffers)
        if pending.isEmpty { pending.returnStorage(to: loop.buffers) }
        writeRequest?.deallocate()
        writeRequest = nil
    }

    override func handleDidClose() {
        // libuv has called every pending write/connect/shutdown callback (with ECANCELED) by now.
        delegate?.streamDidClose(self)
        delegate = nil
        spliceAdvisor = nil
        pending.clear()
        inFlight.clear()
        pending.returnStorage(to: loop.buffers)
        inFlight.returnStorage(to: loop.buffers)
        writeRequest?.deallocate()
        writeRequest = nil
        connectRequest?.deallocate()
        connectRequest = nil
        shutdownRequest?.deallocate()
        shutdownRequest = nil
        super.handleDidClose()
    }
}

// MARK: C callbacks (non-capturing; they recover the stream from `data`)

/// The stream behind a handle or request. Guaranteed, not retained: the stream holds itself
/// alive while its handle is open (rule 2), which covers every callback.
@inline(__always)
private func withStream(_ data: UnsafeMutableRawPointer?, _ body: (TCPStream) -> Void) {
    Unmanaged<TCPStream>.fromOpaque(data!)._withUnsafeGuaranteedRef(body)
}

private let allocateReadBuffer: uv_alloc_cb = { handle, _, buffer in
    withStream(handle!.pointee.data) { owner in
        // An empty buffer: libuv reports the socket readable (UV_ENOBUFS) without reading.
        if owner.splices || owner.reportsReadiness {
            buffer!.pointee = uv_buf_t(base: nil, len: 0)
            return
        }
        buffer!.pointee = uv_buf_t(base: owner.loop.readBuffer.assumingMemoryBound(to: CChar.self), len: EventLoop.readBufferSize)
    }
}

private let onRead: uv_read_cb = { handle, nread, _ in
    withStream(handle!.pointee.data) { $0.didRead(nread) }
}

private let onWrite: uv_write_cb = { request, status in
    withStream(request!.pointee.data) { $0.didWrite(status: status) }
}

private let onConnect: uv_connect_cb = { request, status in
    withStream(request!.pointee.data) { $0.didConnect(status: status) }
}

private let onShutdown: uv_shutdown_cb = { request, _ in
    withStream(request!.pointee.data) { $0.didShutdown() }
}
