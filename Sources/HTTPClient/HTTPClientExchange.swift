// HTTPClientExchange: one HTTP/1.1 request on a fresh connection, on one loop — what the relay
// needs to talk to token endpoints, which are called rarely (once per token lifetime), so there
// is no pooling: each exchange resolves, connects, sends with `Connection: close`, reads the
// whole (bounded) response and closes. Redirects are answers like any other; the caller decides
// (a token client treats them as errors, so a secret never follows a redirect elsewhere).
//
// The connection is the proxy's own `UpstreamConnection`, without a pool and with the
// single-exchange deadline policy (`HTTPClientLimits`); this exchange is its owner: it resolves,
// writes the request, collects the response and says what went wrong in `HTTPClientError`'s words.

import ByteBuffers
import EventLoop
import HTTP1
import HTTPFields

/// Sends `request` on `loop` and calls `completion` exactly once, on the loop (with
/// `.cancelled` after `cancel()`).
@discardableResult
public func sendHTTPRequest(_ request: HTTPClientRequest, on loop: EventLoop, limits: HTTPClientLimits = HTTPClientLimits(),
                            completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void) -> HTTPClientCall {
    let exchange = HTTPClientExchange(request: request, loop: loop, limits: limits, completion: completion)
    exchange.start()
    return HTTPClientCall(exchange: exchange)
}

/// A request under way; loop thread only.
public struct HTTPClientCall {
    fileprivate weak var exchange: HTTPClientExchange?

    /// Closes its connection and completes it with `.cancelled` (nothing if it already completed).
    public func cancel() {
        exchange?.cancel()
    }
}

final class HTTPClientExchange: UpstreamExchangeOwner {
    private let request: HTTPClientRequest
    private let loop: EventLoop
    private let limits: HTTPClientLimits
    private var completion: ((Result<HTTPClientResponse, HTTPClientError>) -> Void)?
    private let connection: UpstreamConnection
    private var status = 0
    private var headers: [HTTPField] = []
    private var body: [UInt8] = []
    /// Keeps the exchange alive from `start` to its completion (the connection holds its owner
    /// only while it is open).
    private var selfReference: HTTPClientExchange?

    init(request: HTTPClientRequest, loop: EventLoop, limits: HTTPClientLimits,
         completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void) {
        self.request = request
        self.loop = loop
        self.limits = limits
        self.completion = completion
        connection = UpstreamConnection(loop: loop, host: request.host, tls: request.tls,
                                        headerLimits: HeaderLimits(maxHeadBytes: 64 * 1024, maxFieldCount: 200),
                                        deadlinePolicy: limits.deadlinePolicy, pool: nil)
    }

    func start() {
        selfReference = self
        connection.begin(for: self)
        // The connect deadline covers resolving (see HTTPClientLimits).
        connection.startResolving()
        // Kept by the connection until it is connected.
        connection.write(requestBytes())
        Resolver.resolve(on: loop, host: request.host, port: request.port) { [self] result in
            guard completion != nil else { return }
            switch result {
            case .failure(let error):
                finish(.failure(.resolve(error.name)))
            case .success(let addresses):
                connection.connect(to: addresses[0])
            }
        }
    }

    private func requestBytes() -> ByteBuffer {
        var out = ByteBuffer()
        out.appendRequestLine(method: request.method, target: request.target)
        let defaultPort: UInt16 = request.tls == nil ? 80 : 443
        let hostText = request.host.contains(":") ? "[\(request.host)]" : request.host
        out.appendField("Host", request.port == defaultPort ? hostText : "\(hostText):\(request.port)")
        for field in request.headers { out.appendField(field.name, field.value) }
        if !request.body.isEmpty || request.method == "POST" || request.method == "PUT" {
            out.appendContentLength(UInt64(request.body.count))
        }
        out.appendField("Connection", "close")
        out.appendEndOfHead()
        out.append(request.body)
        return out
    }

    func cancel() {
        finish(.failure(.cancelled))
    }

    private func finish(_ result: Result<HTTPClientResponse, HTTPClientError>) {
        guard let completion else { return }
        self.completion = nil
        connection.close()
        completion(result)
        selfReference = nil
    }

    // MARK: UpstreamExchangeOwner

    func upstream(_ upstream: UpstreamConnection, didReceiveHead head: HTTPHead) -> HTTP1Parser.BodyExpectation {
        status = head.statusCode
        headers = head.fields.map {
            HTTPField(name: String(decoding: head.name($0), as: UTF8.self), value: String(decoding: head.value($0), as: UTF8.self))
        }
        if request.completesAtHead && status >= 200 {
            finish(.success(HTTPClientResponse(status: status, headers: headers, body: [])))
            return .none
        }
        if let length = head.contentLength, length > UInt64(limits.maxBodyBytes) {
            finish(.failure(.bodyTooLarge(limit: limits.maxBodyBytes)))
        }
        return request.method == "HEAD" ? .none : .framed
    }

    func upstream(_ upstream: UpstreamConnection, didReceiveBody bytes: UnsafeRawBufferPointer) {
        guard completion != nil else { return }
        if body.count + bytes.count > limits.maxBodyBytes {
            finish(.failure(.bodyTooLarge(limit: limits.maxBodyBytes)))
            return
        }
        body.append(contentsOf: bytes)
    }

    func upstream(_ upstream: UpstreamConnection, didStartChunkOfSize size: UInt64) {}
    func upstreamDidFinishChunk(_ upstream: UpstreamConnection) {}

    func upstreamDidFinishMessage(_ upstream: UpstreamConnection) -> Bool {
        // Interim 1xx answers precede the real one.
        if status >= 100 && status < 200 { return false }
        finish(.success(HTTPClientResponse(status: status, headers: headers, body: body)))
        return true
    }

    // The response completes with its message (above), which closes the connection: what the
    // connection reports after that reaches no owner.
    func upstreamDidParseRead(_ upstream: UpstreamConnection) {}
    func upstreamReadOverran(_ upstream: UpstreamConnection) -> Bool { false }
    func upstreamDidFinishResponse(_ upstream: UpstreamConnection) {}

    func upstream(_ upstream: UpstreamConnection, didFail failure: ConnectionFailure) {
        finish(.failure(HTTPClientError(failure)))
    }

    func upstreamDidDrain(_ upstream: UpstreamConnection) {}

    // The request never asks to switch protocols; an upgrade answered anyway is not followed
    // (the response deadline ends the exchange).
    func upstream(_ upstream: UpstreamConnection, didUpgradeWith bytes: UnsafeRawBufferPointer) {}
    func upstreamTunnel(_ upstream: UpstreamConnection, didRead bytes: UnsafeRawBufferPointer) {}
    func upstreamTunnelDidEnd(_ upstream: UpstreamConnection) {}
}
