// The demo's upstream: a small HTTP/1.1 server on its own loop and thread that answers every
// request with a JSON description of what it received (method, target, headers, body size),
// so `oauth-relay demo` shows what the relay adds and removes.
//
// It also plays a DEV-ONLY token issuer at `POST /dev-only/token`: any client_credentials
// request gets a random opaque token that lives `devTokenSeconds`. It checks nothing and must
// never stand in for an authorization server; it exists so the demo shows tokens being
// injected and refreshed without anything else installed.

import ByteBuffers
import Dispatch
import EventLoop
import HTTP1
import Proxy

final class DemoEchoServer {
    /// Where the dev-only issuer answers, and how long its tokens live.
    static let tokenPath = "/dev-only/token"
    static let devTokenSeconds = 30

    private let thread: WorkerThread
    private let stopSignal: LoopWakeup

    /// Starts listening on `address`; throws when it cannot bind.
    init(address: SocketAddress) throws {
        final class Outcome: @unchecked Sendable {
            // Written by the server thread before `ready` is signalled, read after.
            var result: Result<LoopWakeup, UVError>?
        }
        let outcome = Outcome()
        let ready = DispatchSemaphore(value: 0)
        thread = WorkerThread {
            do {
                let loop = try EventLoop()
                let server = try EchoListener(loop: loop, address: address)
                outcome.result = .success(server.stopSignal)
                ready.signal()
                loop.run()
                try? loop.close()
            } catch {
                outcome.result = .failure(error as! UVError)
                ready.signal()
            }
        }
        ready.wait()
        switch outcome.result! {
        case .success(let wakeup): stopSignal = wakeup
        case .failure(let error):
            thread.join()
            throw error
        }
    }

    func stop() {
        stopSignal.wake()
        thread.join()
    }
}

private final class EchoListener {
    let loop: EventLoop
    var listener: TCPListener?
    var connections: [ObjectIdentifier: EchoConnection] = [:]
    var stopSignal: LoopWakeup!

    init(loop: EventLoop, address: SocketAddress) throws(UVError) {
        self.loop = loop
        listener = try TCPListener(loop: loop, address: address, reusePort: false) { [unowned self] stream in
            let connection = EchoConnection(stream: stream, server: self)
            self.connections[ObjectIdentifier(connection)] = connection
        }
        stopSignal = LoopWakeup(loop: loop) { [unowned self] in
            self.listener?.close()
            for connection in self.connections.values { connection.stream.close() }
            self.stopSignal.close()
        }
    }
}

private final class EchoConnection: ByteStreamDelegate, HTTP1ParserDelegate {
    let stream: TCPStream
    unowned let server: EchoListener
    let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 65536, maxFieldCount: 100))
    var description = ""
    var bodyBytes = 0
    var out = ByteBuffer()

    init(stream: TCPStream, server: EchoListener) {
        self.stream = stream
        self.server = server
        parser.delegate = self
        stream.delegate = self
        stream.startReading()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        if case .failed = parser.feed(bytes) { stream.closeAfterWrites() }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) { stream.close() }

    func streamDidClose(_ stream: any ByteStream) {
        server.connections.removeValue(forKey: ObjectIdentifier(self))
    }

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        let head = parser.head
        func text(_ bytes: UnsafeRawBufferPointer) -> String { JSONText.quote(String(decoding: bytes, as: UTF8.self)) }
        let headers = head.fields.map { "[\(text(head.name($0))),\(text(head.value($0)))]" }.joined(separator: ",")
        description = "\"method\":\(text(head.methodName)),\"target\":\(text(head.target)),\"headers\":[\(headers)]"
        bodyBytes = 0
        return .framed
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) { bodyBytes += bytes.count }
    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {}
    func parserDidFinishChunk(_ parser: HTTP1Parser) {}

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        let issuesToken = parser.head.isPost && ASCII.equalsIgnoringCase(parser.head.target, Self.tokenPath)
        let body = issuesToken ? Self.devToken()
            : "{\"upstream\":\"oauth-relay demo echo\",\(description),\"bodyBytes\":\(bodyBytes)}\n"
        out.clear()
        out.append("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ")
        out.appendDecimal(body.utf8.count)
        out.append(parser.head.keepAlive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n")
        out.append(body)
        stream.write(out)
        if !parser.head.keepAlive { stream.closeAfterWrites() }
        return false
    }

    static let tokenPath = Array(DemoEchoServer.tokenPath.utf8)

    /// A random opaque token, clearly marked as the demo's, with a short lifetime.
    private static func devToken() -> String {
        var random = SystemRandomNumberGenerator()
        let hex = (0..<16).map { _ in String(random.next() & 0xFF, radix: 16) }.joined()
        return "{\"access_token\":\"dev-only-\(hex)\",\"token_type\":\"Bearer\",\"expires_in\":\(DemoEchoServer.devTokenSeconds)}\n"
    }
}
