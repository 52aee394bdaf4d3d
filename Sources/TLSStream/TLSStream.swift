// TLSStream: TLS over a TCP stream, as a `ByteStream`, so the proxy's upstream connections and
// the token client speak https without knowing it. The engine (TLS module) transforms bytes;
// this class moves them: TCP reads are fed to the engine and its plaintext goes to the
// delegate; plaintext writes go through the engine and its ciphertext to TCP.
//
// "Connected" is reported to the delegate only when the handshake has completed (and the
// certificate, name and pins were accepted), so a connect timeout covers the handshake and a
// refused certificate is a connect failure. Why it failed is in `failureReason`, which the
// `ByteStream` protocol carries, so an owner reads it without knowing the stream is TLS.
//
// The TCP stream underneath reports its socket readable instead of reading it
// (`TCPStream.reportsReadiness`), and OpenSSL receives the ciphertext itself, through this stream
// (`CiphertextSource`), straight into its record buffer: a body's bytes are copied once fewer
// than if they were read into the loop's buffer and fed (callgrind, a download from a TLS
// upstream). The end and errors of the socket are met by those receives, and reported as the
// TCP stream would have reported them.

import ByteBuffers
import EventLoop
import TLS

public final class TLSStream: ByteStream, ByteStreamDelegate, CiphertextSource {
    public var delegate: (any ByteStreamDelegate)?
    public let loop: EventLoop
    private var tcp: TCPStream!
    private let engine: TLSEngine
    /// Ciphertext on its way to `tcp` (reused).
    private var outgoing = ByteBuffer()
    private var handshakeReported = false
    private var tcpConnected = false

    /// TCP is up and the TLS handshake is still going on (what a connect timeout interrupted).
    public var isHandshaking: Bool { tcpConnected && !handshakeReported }
    /// The TLS error that ended the stream, in words safe to show a client.
    public private(set) var failureReason: String?

    /// The relay's side of a TLS listener (a server engine), not a connection it opened.
    private let accepted: Bool
    /// Ciphertext fed before the owner started reading (bytes that came with a `CONNECT` head),
    /// decrypted at the first `startReading`.
    private var fedBeforeReading = false
    /// Receives OpenSSL may still make during the current readiness report.
    private var receivesLeft = 0
    /// How the socket ended, met by a receive during the current readiness report.
    private var transportEnd: TransportEnd?
    /// The stream's end (close_notify, or a failure) was reported: whatever the TCP stream
    /// reports afterwards (its own end, once reading resumed) is not reported again.
    private var endReported = false

    private enum TransportEnd {
        case ended
        case failed(UVError)
    }

    private init(loop: EventLoop, configuration: TLSConfiguration, host: String) {
        self.loop = loop
        engine = TLSEngine(client: configuration, host: host)
        accepted = false
    }

    private init(accepting tcp: TCPStream, configuration: TLSConfiguration) {
        loop = tcp.loop
        engine = TLSEngine(server: configuration)
        accepted = true
        self.tcp = tcp
        tcpConnected = true
        tcp.reportsReadiness = true
    }

    /// Serves TLS on a connection accepted by a TLS listener; the client's handshake is read
    /// once the owner starts reading. A failed handshake ends the stream (`didEndWith`).
    public static func accept(_ tcp: TCPStream, configuration: TLSConfiguration) -> TLSStream {
        let stream = TLSStream(accepting: tcp, configuration: configuration)
        tcp.delegate = stream
        return stream
    }

    /// Serves TLS on a connection whose first bytes were read already (the forward proxy's
    /// `CONNECT`: what the client sent after its head is the start of its handshake). They are
    /// decrypted, and handed on, once the owner starts reading.
    public static func accept(_ tcp: TCPStream, configuration: TLSConfiguration, receivedBytes: UnsafeRawBufferPointer) -> TLSStream {
        let stream = accept(tcp, configuration: configuration)
        if !receivedBytes.isEmpty {
            stream.engine.feed(receivedBytes)
            stream.fedBeforeReading = true
        }
        return stream
    }

    /// Connects to `address` and starts the handshake for `host` (SNI and the checked name,
    /// unless the configuration names another).
    public static func connect(on loop: EventLoop, to address: SocketAddress, configuration: TLSConfiguration,
                               host: String, keepAlive: TCPKeepAlive? = nil, delegate: any ByteStreamDelegate) throws(UVError) -> TLSStream {
        let stream = TLSStream(loop: loop, configuration: configuration, host: host)
        stream.delegate = delegate
        stream.tcp = try TCPStream.connect(on: loop, to: address, keepAlive: keepAlive, delegate: stream)
        stream.tcp.reportsReadiness = true
        // The ClientHello waits in the TCP stream's queue until the connection is up.
        stream.flushOutgoing()
        return stream
    }

    /// Connects over TLS when `tls` is given, over plain TCP otherwise: the one place where the
    /// upstream pool and the HTTP client choose their transport. Either way the stream reports
    /// "connected" when it can carry the request, and a TLS failure in `failureReason`.
    /// `keepAlive` is for the TCP connection underneath.
    public static func connect(on loop: EventLoop, to address: SocketAddress, tls: TLSConfiguration?, host: String,
                               keepAlive: TCPKeepAlive? = nil, delegate: any ByteStreamDelegate) throws(UVError) -> any ByteStream {
        guard let tls else { return try TCPStream.connect(on: loop, to: address, keepAlive: keepAlive, delegate: delegate) }
        return try connect(on: loop, to: address, configuration: tls, host: host, keepAlive: keepAlive, delegate: delegate)
    }

    // MARK: ByteStream

    public var isClosed: Bool { tcp.isClosed }
    public var queuedBytes: Int { tcp.queuedBytes }
    public var isAboveHighWater: Bool { tcp.isAboveHighWater }
    public func startReading() {
        tcp.startReading()
        if fedBeforeReading {
            fedBeforeReading = false
            deliverPlaintext()
        }
    }
    public func stopReading() { tcp.stopReading() }
    public func peerAddress() -> SocketAddress? { tcp.peerAddress() }
    public func close() { tcp.close() }

    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard !tcp.isClosed else { return }
        engine.write(bytes)
        flushOutgoing()
    }

    public func closeAfterWrites(lingerMilliseconds: UInt64, stallMilliseconds: UInt64) {
        engine.close()
        flushOutgoing()
        tcp.closeAfterWrites(lingerMilliseconds: lingerMilliseconds, stallMilliseconds: stallMilliseconds)
    }

    private func flushOutgoing() {
        guard engine.hasOutgoing else { return }
        outgoing.clear()
        engine.takeOutgoing(into: &outgoing)
        tcp.write(outgoing.readableBytes)
        outgoing.clear()
    }

    // MARK: ByteStreamDelegate (the TCP stream underneath)

    public func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        if let error {
            delegate?.stream(self, didConnectWith: error)
            return
        }
        // TCP is up; the handshake goes on as the server answers.
        tcpConnected = true
        tcp.startReading()
        flushOutgoing()
    }

    public func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        deliverPlaintext(fed: bytes)
    }

    public func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        transportDidEnd(with: error)
    }

    /// The socket is readable: OpenSSL receives from it (`receiveCiphertext`) and decrypts,
    /// up to `receivesPerReport` receives, and an end or error it met is reported after the
    /// plaintext before it, as the TCP stream reports them: an end only while reading (a socket
    /// that ended stays readable, so a stopped stream meets it again once reading resumes), and
    /// nothing once the stream is closed or its end was reported.
    public func streamIsReadable(_ stream: TCPStream) {
        receivesLeft = Self.receivesPerReport
        transportEnd = nil
        let reportedEnd = deliverPlaintext(from: self)
        receivesLeft = 0
        guard let end = transportEnd else { return }
        transportEnd = nil
        guard !reportedEnd, !tcp.isClosed else { return }
        switch end {
        case .ended:
            guard tcp.isReading else { return }
            tcp.stopReading()
            transportDidEnd(with: nil)
        case .failed(let error):
            tcp.stopReading()
            transportDidEnd(with: error)
        }
    }

    /// OpenSSL wants ciphertext: one receive from the socket, while the report's budget lasts.
    /// 0 when there is nothing (more) to read now; an end or error is kept for
    /// `streamIsReadable`.
    public func receiveCiphertext(into space: UnsafeMutableRawBufferPointer) -> Int {
        guard receivesLeft > 0 else { return 0 }
        receivesLeft -= 1
        switch tcp.receive(into: space) {
        case .received(let count):
            return count
        case .wouldBlock:
            break
        case .ended:
            transportEnd = .ended
        case .failed(let error):
            transportEnd = .failed(error)
        }
        receivesLeft = 0
        return 0
    }

    /// At most this many receives per readiness report (with read-ahead, about a record each:
    /// 1 MiB; libuv itself reads up to 32 times 64 KiB per report), so one busy connection does
    /// not hold its worker's other connections back. 16 made a 64 MiB download from a TLS
    /// upstream wait in epoll 274 times, 64 makes it 83 (strace -c; nginx: 143).
    static let receivesPerReport = 64

    /// The TCP stream ended (`error == nil`) or failed, and has stopped reading.
    private func transportDidEnd(with error: UVError?) {
        guard !endReported else { return }
        if let error {
            endReported = true
            if handshakeReported || accepted {
                delegate?.stream(self, didEndWith: error)
            } else {
                delegate?.stream(self, didConnectWith: error)
            }
            return
        }
        // A TCP end: clean only after close_notify; otherwise the stream was cut short.
        // An end the engine's state reports (close_notify seen, or a failure) is reported once.
        engine.feedEndOfStream()
        if deliverPlaintext() { return }
        endReported = true
        if handshakeReported || accepted {
            delegate?.stream(self, didEndWith: nil)
        } else {
            failureReason = "the upstream closed the connection during the TLS handshake"
            delegate?.stream(self, didConnectWith: Self.protocolError)
        }
    }

    public func streamDidDrain(_ stream: any ByteStream) {
        delegate?.streamDidDrain(self)
    }

    public func streamDidClose(_ stream: any ByteStream) {
        delegate?.streamDidClose(self)
        delegate = nil
    }

    /// Decrypts what was fed, and `ciphertext` (just read) or what OpenSSL receives from
    /// `source`, hands the plaintext on, sends what the engine has to send, and reports the
    /// handshake's end, or the stream's end or failure; returns true when it reported an end
    /// (close_notify or a failure).
    ///
    /// The plaintext of one TCP read goes to the delegate in one piece, as plain TCP's would
    /// (up to `plaintextSpace`), not record by record: a body then leaves in one write per read
    /// instead of one per 16 KiB record. The space is lent by the loop's pool of plaintext spaces
    /// for the length of the call, so an idle connection holds none.
    @discardableResult
    private func deliverPlaintext(fed ciphertext: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                                  from source: (any CiphertextSource)? = nil) -> Bool {
        var space = ByteBuffer()
        space.borrowStorage(from: loop.plaintextSpaces)
        space.reserveCapacity(Self.plaintextSpace)
        defer { space.returnStorage(to: loop.plaintextSpaces) }
        let plaintextSpace = UnsafeMutableRawBufferPointer(start: space.baseAddress, count: space.capacity)
        let status = if let source {
            engine.read(from: source, into: plaintextSpace) { handOn($0) }
        } else {
            engine.read(fed: ciphertext, into: plaintextSpace) { handOn($0) }
        }
        flushOutgoing()
        switch status {
        case .wantsRead, .established:
            reportHandshakeIfDone()
            return false
        case .handshaking:
            return false
        case .closed:
            reportHandshakeIfDone()
            tcp.stopReading()
            guard !endReported else { return true }
            endReported = true
            delegate?.stream(self, didEndWith: nil)
            return true
        case .failed(let error):
            tcp.stopReading()
            guard !endReported else { return true }
            endReported = true
            failureReason = "\(error)"
            if handshakeReported || accepted {
                delegate?.stream(self, didEndWith: Self.protocolError)
            } else {
                delegate?.stream(self, didConnectWith: Self.protocolError)
            }
            return true
        }
    }

    private func handOn(_ plaintext: UnsafeRawBufferPointer) {
        reportHandshakeIfDone()
        delegate?.stream(self, didRead: plaintext)
    }

    private func reportHandshakeIfDone() {
        guard !handshakeReported, case .established = engine.state else { return }
        handshakeReported = true
        if !accepted { delegate?.stream(self, didConnectWith: nil) }
    }

    /// Plaintext handed to the delegate at once, at most: a TCP read's worth. 256 KiB took a
    /// quarter of the writes of a 1 GiB download from a TLS upstream and the same CPU (0.71 s/GiB,
    /// bench/bulk-bodies.sh, 2026-11-28).
    static let plaintextSpace = 64 * 1024

    /// What the delegate's UVError-typed callbacks get for a TLS failure (`failureReason` says why).
    static let protocolError = UVError.protocolError
}
