// ConnectTunnel: a `CONNECT` the forward proxy tunnels (a host no route names). It resolves the
// target through the worker's `TunnelResolver` (a few lookups at once, the rest in line: 503
// when the line is full), connects to its addresses in turn, and answers `200 Connection
// established` only once connected (502 when every address fails, 504 when
// `upstreamConnectTimeoutSeconds` pass first), then moves bytes both ways untouched:
//
// - backpressure: a side is not read while the other's write backlog is past its high-water
//   mark, and is read again when it drains;
// - half-close: when one side ends, the other gets FIN after what is queued for it, and the
//   tunnel closes once both ended (each side as soon as what is queued for it is written); an
//   error on either side closes both;
// - `limits.idleTimeoutSeconds` without a byte read or written either way closes both.
//
// Nothing from inside the tunnel is looked at or logged: one line at its end names the target
// and the byte counts.

import ByteBuffers
import EventLoop
import Logging

final class ConnectTunnel: ByteStreamDelegate {
    private enum Phase { case connecting, open, ended }

    /// Strong: the worker keeps the tunnel until both its sockets closed (`tunnelDidClose`).
    private let worker: ProxyWorker
    let target: ForwardPlacement.ConnectTarget
    private let client: TCPStream
    private var upstream: TCPStream?
    private let timer: DeadlineTimer
    private var phase = Phase.connecting
    /// What the client sent after its `CONNECT` head: the upstream's first bytes.
    private var pipelined: [UInt8]
    private var clientEnded = false
    private var upstreamEnded = false
    private var clientClosed = false
    private var upstreamClosed = true
    private(set) var bytesFromClient = 0
    private(set) var bytesToClient = 0
    private var lastActivity: UInt64 = 0
    /// Both sides' queued bytes when the idle clock last looked: a change is write progress.
    private var lastQueuedBytes = 0
    private var wasOpened = false
    private var reportedClose = false
    private var idleMilliseconds: UInt64
    private let viaSuffix: [UInt8]
    /// The lookup in the worker's `TunnelResolver` while it runs or waits.
    private var lookup: Int?
    /// The addresses not tried yet, in the resolver's order.
    private var untried: ArraySlice<SocketAddress> = []

    /// After a worker's drain starts, a tunnel quiet for this long closes.
    static let drainQuietMilliseconds: UInt64 = 1000

    init(worker: ProxyWorker, client: TCPStream, target: ForwardPlacement.ConnectTarget, pipelined: [UInt8], settings: ProxySettings) {
        self.worker = worker
        self.client = client
        self.target = target
        self.pipelined = pipelined
        idleMilliseconds = settings.idleTimeoutMilliseconds
        viaSuffix = settings.viaSuffix
        timer = DeadlineTimer(loop: client.loop)
        client.delegate = self
        client.stopReading()
        timer.whenExpired { [unowned self] in self.timerFired() }
        timer.arm(afterMilliseconds: settings.connectTimeoutMilliseconds)
        let outcome = worker.tunnelResolver.resolve(host: target.host, port: target.port, cacheMilliseconds: settings.dnsCacheMilliseconds) {
            [weak self] result in self?.resolved(result)
        }
        switch outcome {
        case .answered: break
        case .pending(let ticket): if phase == .connecting { lookup = ticket }
        case .refused: fail(.tunnelLookupsBusy(target), error: nil)
        }
    }

    private func resolved(_ result: Result<[SocketAddress], UVError>) {
        lookup = nil
        guard phase == .connecting, !clientClosed else { return }
        switch result {
        case .failure(let error):
            fail(.tunnelConnectFailed(target, reason: "the name does not resolve (\(error.name))"), error: error)
        case .success(let addresses):
            untried = addresses[...]
            connectNext(lastError: nil)
        }
    }

    /// Connects to the next address not tried; when none is left, the last failure is the 502.
    private func connectNext(lastError: UVError?) {
        var lastError = lastError
        while let address = untried.popFirst() {
            do throws(UVError) {
                upstream = try TCPStream.connect(on: client.loop, to: address, delegate: self)
                upstreamClosed = false
                return
            } catch {
                // `connect` closed the stream it made: its close is not this tunnel's upstream's
                // (`streamDidClose` ignores it).
                lastError = error
            }
        }
        fail(.tunnelConnectFailed(target, reason: lastError?.message ?? "the name has no address"), error: lastError)
    }

    /// The lookup is no longer wanted (a timeout, a failure, the client gone).
    private func cancelLookup() {
        guard let ticket = lookup else { return }
        lookup = nil
        worker.tunnelResolver.cancel(ticket)
    }

    /// The connection failed before the 200: the client gets `problem`, then the socket closes.
    private func fail(_ problem: Problem, error: UVError?) {
        phase = .ended
        timer.disarm()
        cancelLookup()
        worker.logger.warning("tunnel connect failed", metadata: [
            "target": .string(target.description), "status": .stringConvertible(problem.status),
            "error": .string(error?.name ?? problem.slug),
        ])
        var answer = ByteBuffer()
        problem.write(keepAlive: false, viaSuffix: viaSuffix, into: &answer)
        client.write(answer)
        client.closeAfterWrites()
        upstream?.close()
    }

    private func timerFired() {
        switch phase {
        case .connecting:
            fail(.tunnelConnectTimedOut(target), error: nil)
        case .open:
            let now = client.loop.nowMilliseconds
            noteWriteProgress(now: now)
            if now >= lastActivity + idleMilliseconds { return closeBoth() }
            timer.arm(at: lastActivity + idleMilliseconds)
        case .ended:
            break
        }
    }

    /// Bytes written since the clock last looked (what is queued shrank or changed) count as
    /// activity: a slow reader still taking a large download is not idle.
    private func noteWriteProgress(now: UInt64) {
        let queued = client.queuedBytes + (upstream?.queuedBytes ?? 0)
        if queued != lastQueuedBytes {
            lastQueuedBytes = queued
            lastActivity = now
        }
    }

    private func opened() {
        phase = .open
        wasOpened = true
        lastActivity = client.loop.nowMilliseconds
        timer.arm(afterMilliseconds: idleMilliseconds)
        ClientConnection.connectionEstablished.withUnsafeBytes { client.write($0) }
        if !pipelined.isEmpty, let upstream {
            bytesFromClient += pipelined.count
            pipelined.withUnsafeBytes { upstream.write($0) }
            pipelined = []
        }
        if upstream?.isAboveHighWater != true { client.startReading() }
        upstream?.startReading()
    }

    private func closeBoth() {
        phase = .ended
        timer.disarm()
        cancelLookup()
        client.close()
        upstream?.close()
    }

    // MARK: ByteStreamDelegate (both sides)

    func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        guard phase == .connecting, let upstream, stream === upstream else { return }
        if let error {
            guard !untried.isEmpty else { return fail(.tunnelConnectFailed(target, reason: error.message), error: error) }
            // The next address, within the same connect deadline; the failed socket is not
            // this tunnel's any more.
            upstream.delegate = nil
            upstream.close()
            self.upstream = nil
            upstreamClosed = true
            return connectNext(lastError: error)
        }
        opened()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard phase == .open, let upstream else { return }
        lastActivity = client.loop.nowMilliseconds
        if stream === client {
            bytesFromClient += bytes.count
            upstream.write(bytes)
            if upstream.isAboveHighWater { client.stopReading() }
        } else {
            bytesToClient += bytes.count
            client.write(bytes)
            if client.isAboveHighWater { upstream.stopReading() }
        }
    }

    func streamDidDrain(_ stream: any ByteStream) {
        guard phase == .open else { return }
        lastActivity = client.loop.nowMilliseconds
        if stream === upstream, !clientEnded { client.startReading() }
        if stream === client, !upstreamEnded { upstream?.startReading() }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        guard phase == .open, let upstream else {
            // Before the 200 only the upstream is read (its connect), and after the end nothing.
            if phase == .connecting { closeBoth() }
            return
        }
        guard error == nil else { return closeBoth() }
        if stream === client {
            clientEnded = true
            upstream.finishWriting()
        } else {
            upstreamEnded = true
            client.finishWriting()
        }
        if clientEnded && upstreamEnded {
            // Both peers sent their FIN: nothing is left to read, so no linger; each side
            // closes once what is queued for it is written.
            phase = .ended
            timer.disarm()
            client.closeAfterWrites(lingerMilliseconds: 0)
            upstream.closeAfterWrites(lingerMilliseconds: 0)
        }
    }

    func streamDidClose(_ stream: any ByteStream) {
        if stream === client {
            guard !clientClosed else { return }
            clientClosed = true
            // After both ends the upstream still writes what the client sent last: as for the
            // upstream below, only a tunnel not yet ended ends with the client.
            if phase != .ended { closeBoth() }
        } else if let upstream, stream === upstream {
            guard !upstreamClosed else { return }
            upstreamClosed = true
            // After a failed connect the client's socket carries the 502, and after both ends
            // what is queued for it: only an open tunnel ends with the upstream.
            if phase == .open { closeBoth() }
        } else {
            // A socket this tunnel let go of (a failed connect to an earlier address).
            return
        }
        guard clientClosed && upstreamClosed, !reportedClose else { return }
        reportedClose = true
        phase = .ended
        timer.close()
        if wasOpened {
            worker.logger.info("tunnel", metadata: [
                "target": .string(target.description),
                "bytes_from_client": .stringConvertible(bytesFromClient),
                "bytes_to_client": .stringConvertible(bytesToClient),
            ])
        }
        worker.tunnelDidClose(self)
    }

    /// Closes both sides now (the worker's shutdown grace ran out).
    func close() {
        closeBoth()
    }

    /// The worker stops: a tunnel still connecting is answered 503, one quiet for
    /// `drainQuietMilliseconds` closes now, and the others close once quiet that long (or when
    /// the grace period ends).
    func drain() {
        switch phase {
        case .connecting:
            fail(.tunnelWorkerStopping(target), error: nil)
        case .open:
            let now = client.loop.nowMilliseconds
            noteWriteProgress(now: now)
            idleMilliseconds = min(idleMilliseconds, Self.drainQuietMilliseconds)
            if now >= lastActivity + idleMilliseconds { return closeBoth() }
            timer.arm(at: lastActivity + idleMilliseconds)
        case .ended:
            break
        }
    }
}
