// The demo's upstream: a small HTTP/1.1 server on its own loop and thread that answers every
// request with a JSON description of what it received (method, target, headers, body size),
// so `oauth-relay demo` shows what the relay adds and removes.
//
// It also plays a DEV-ONLY token issuer at `POST /dev-only/token`: any client_credentials
// request gets a random opaque token that lives `devTokenSeconds`. It checks nothing and must
// never stand in for an authorization server; it exists so the demo shows tokens being
// injected and refreshed without anything else installed.

import EventLoop
import LocalHTTP
import Proxy
import HTTPFields
import SafeText

final class DemoEchoServer {
    /// Where the dev-only issuer answers, and how long its tokens live.
    static let tokenPath = "/dev-only/token"
    static let devTokenSeconds = 30

    private let thread: WorkerThread
    private let stopSignal: LoopWakeup

    /// Starts listening on `address`; throws when it cannot bind.
    init(address: SocketAddress) throws {
        let (thread, outcome) = WorkerThread.start { (report: (Result<LoopWakeup, any Error>) -> Void) in
            do {
                let loop = try EventLoop()
                let server = try EchoListener(loop: loop, address: address)
                report(.success(server.stopSignal))
                loop.run()
                try? loop.close()
            } catch {
                report(.failure(error))
            }
        }
        self.thread = thread
        switch outcome {
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

/// The echo and the dev-only issuer, on the demo's own loop.
private final class EchoListener {
    var server: LocalHTTPServer?
    var stopSignal: LoopWakeup!

    init(loop: EventLoop, address: SocketAddress) throws(UVError) {
        server = try LocalHTTPServer(loop: loop, address: address,
                                     badRequest: { LocalResponse(status: 400, contentType: "text/plain", body: $0 + "\n") }) { request in
            if request.method == "POST" && request.path == DemoEchoServer.tokenPath {
                return LocalResponse(status: 200, body: Self.devToken())
            }
            func quote(_ text: String) -> String { JSONText.quote(text) }
            let headers = request.headers.map { "[\(quote($0.name)),\(quote($0.value))]" }.joined(separator: ",")
            return LocalResponse(status: 200, body: "{\"upstream\":\"oauth-relay demo echo\",\"method\":\(quote(request.method)),"
                                 + "\"target\":\(quote(request.target)),\"headers\":[\(headers)],\"bodyBytes\":\(request.body.count)}\n")
        }
        stopSignal = LoopWakeup(loop: loop) { [unowned self] in
            self.server?.close()
            self.server = nil
            self.stopSignal.close()
        }
    }

    /// A random opaque token, clearly marked as the demo's, with a short lifetime.
    private static func devToken() -> String {
        var random = SystemRandomNumberGenerator()
        let hex = (0..<16).map { _ in String(random.next() & 0xFF, radix: 16) }.joined()
        return "{\"access_token\":\"dev-only-\(hex)\",\"token_type\":\"Bearer\",\"expires_in\":\(DemoEchoServer.devTokenSeconds)}\n"
    }
}
