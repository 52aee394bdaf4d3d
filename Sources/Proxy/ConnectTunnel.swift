// ConnectTunnel: a `CONNECT` the forward proxy tunnels (a host no route names). It resolves and
// connects to the target, answers `200 Connection established` only once connected (502 when
// the connection fails, 504 when `upstreamConnectTimeoutSeconds` pass first), then moves bytes
// both ways untouched:
//
// - backpressure: a side is not read while the other's write backlog is past its high-water
//   mark, and is read again when it drains;
// - half-close: when one side ends, the other gets FIN after what is queued for it, and the
//   tunnel closes once both ended; an error on either side closes both;
// - `limits.idleTimeoutSeconds` without a byte either way closes both.
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
    private var wasOpened = false
    private let idleMilliseconds: UInt64
    private let viaSuffix: [UInt8]

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
        Resolver.resolve(on: client.loop, host: target.host, port: target.port) { [self] result in resolved(result) }
    }

    private func resolved(_ result: Result<[SocketAddress], UVError>) {
        guard phase == .connecting, !clientClosed else { return }
        switch result {
        case .failure(let error):
            fail(.tunnelConnectFailed(target, reason: "the name does not resolve (\(error.name))"), error: error)
        case .success(let addresses):
            do throws(UVError) {
                upstream = try TCPStream.connect(on: client.loop, to: addresses[0], delegate: self)
                upstreamClosed = false
            } catch {
                fail(.tunnelConnectFailed(target, reason: error.message), error: error)
            }
        }
    }

    /// The connection failed before the 200: the client gets `problem`, then the socket closes.
    private func fail(_ problem: Problem, error: UVError?) {
        phase = .ended
        timer.disarm()
        worker.logger.warning("tunnel connect failed", metadata: [
            "target": .string(target.description), "status": .stringConvertible(problem.status),
            "error": .string(error?.name ?? "timeout"),
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
            if now >= lastActivity + idleMilliseconds { return closeBoth() }
            timer.arm(at: lastActivity + idleMilliseconds)
        case .ended:
            break
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
        client.close()
        upstream?.close()
    }

    // MARK: ByteStreamDelegate (both sides)

    func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        guard phase == .connecting, stream === upstream else { return }
        if let error { return fail(.tunnelConnectFailed(target, reason: error.message), error: error) }
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
            phase = .ended
            timer.disarm()
            client.closeAfterWrites()
            upstream.closeAfterWrites()
        }
    }

    func streamDidClose(_ stream: any ByteStream) {
        if stream === client {
            clientClosed = true
            upstream?.close()
        } else {
            upstreamClosed = true
            // After a failed connect the client's socket carries the 502, and after both ends
            // what is queued for it: only an open tunnel ends with the upstream.
            if phase == .open { closeBoth() }
        }
        guard clientClosed && upstreamClosed else { return }
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
}
