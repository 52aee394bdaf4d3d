// HTTPClientExchange: one HTTP/1.1 request on a fresh connection, on one loop — what the relay
// needs to talk to token endpoints, which are called rarely (once per token lifetime), so there
// is no pooling: each exchange resolves, connects, sends with `Connection: close`, reads the
// whole (bounded) response and closes. Redirects are answers like any other; the caller decides
// (a token client treats them as errors, so a secret never follows a redirect elsewhere).

import ByteBuffers
import EventLoop
import HTTP1
import HTTPFields
import TLS
import TLSStream

public struct HTTPClientRequest: Sendable {
    public var method: String
    public var host: String
    public var port: UInt16
    /// Origin-form target, e.g. `/oauth2/token?x=1`.
    public var target: String
    /// Sent in order after `Host`; `Content-Length` and `Connection` are the client's own.
    public var headers: [HTTPField]
    public var body: [UInt8]
    /// https: the TLS settings to connect with; nil for plain http.
    public var tls: TLSConfiguration?

    public init(method: String, host: String, port: UInt16, target: String, headers: [HTTPField] = [], body: [UInt8] = [],
                tls: TLSConfiguration? = nil) {
        self.method = method
        self.host = host
        self.port = port
        self.target = target
        self.headers = headers
        self.body = body
        self.tls = tls
    }
}

public struct HTTPClientResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [HTTPField]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPField], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first field named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.value(named: name)
    }
}

public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case resolve(String)
    case connect(String)
    /// The TLS handshake failed (unknown CA, name mismatch, expired, pin, ...).
    case tls(String)
    case connectTimeout
    case responseTimeout
    /// The server closed before a complete response.
    case closedEarly
    case invalidResponse(String)
    case bodyTooLarge(limit: Int)
    case cancelled

    public var description: String {
        switch self {
        case .resolve(let detail): return "cannot resolve the host: \(detail)"
        case .connect(let detail): return "cannot connect: \(detail)"
        case .tls(let detail): return "TLS failed: \(detail)"
        case .connectTimeout: return "connecting timed out"
        case .responseTimeout: return "no complete response in time"
        case .closedEarly: return "the server closed the connection before a complete response"
        case .invalidResponse(let detail): return "invalid HTTP response: \(detail)"
        case .bodyTooLarge(let limit): return "response body larger than \(limit) bytes"
        case .cancelled: return "cancelled"
        }
    }
}

/// The deadlines of one exchange. Both are total, never pushed back by bytes that arrive: a
/// server that drips its answer a byte at a time cannot hold an exchange open past
/// `connectTimeoutMilliseconds` (resolving, connecting, the TLS handshake) plus
/// `responseTimeoutMilliseconds` (from connected to the last byte of the response).
public struct HTTPClientLimits: Sendable {
    public var connectTimeoutMilliseconds: UInt64
    public var responseTimeoutMilliseconds: UInt64
    public var maxBodyBytes: Int

    public init(connectTimeoutMilliseconds: UInt64 = 5000, responseTimeoutMilliseconds: UInt64 = 30_000, maxBodyBytes: Int = 1 << 20) {
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.responseTimeoutMilliseconds = responseTimeoutMilliseconds
        self.maxBodyBytes = maxBodyBytes
    }
}

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

final class HTTPClientExchange: ByteStreamDelegate, HTTP1ParserDelegate {
    private let request: HTTPClientRequest
    private let loop: EventLoop
    private let limits: HTTPClientLimits
    private var completion: ((Result<HTTPClientResponse, HTTPClientError>) -> Void)?
    private var stream: (any ByteStream)?
    private let parser: HTTP1Parser
    private var timer: LoopTimer?
    private var connected = false
    private var status = 0
    private var headers: [HTTPField] = []
    private var body: [UInt8] = []
    /// Keeps the exchange alive from `start` to its completion (the stream's delegate
    /// reference alone does not cover the time before it exists).
    private var selfReference: HTTPClientExchange?

    init(request: HTTPClientRequest, loop: EventLoop, limits: HTTPClientLimits,
         completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void) {
        self.request = request
        self.loop = loop
        self.limits = limits
        self.completion = completion
        parser = HTTP1Parser(kind: .response, limits: HeaderLimits(maxHeadBytes: 64 * 1024, maxFieldCount: 200))
        parser.delegate = self
    }

    func start() {
        selfReference = self
        timer = LoopTimer(loop: loop) { [unowned self] in
            self.finish(.failure(self.connected ? .responseTimeout : .connectTimeout))
        }
        timer?.start(afterMilliseconds: limits.connectTimeoutMilliseconds)
        Resolver.resolve(on: loop, host: request.host, port: request.port) { [self] result in
            guard completion != nil else { return }
            switch result {
            case .failure(let error):
                finish(.failure(.resolve(error.name)))
            case .success(let addresses):
                connect(to: addresses[0])
            }
        }
    }

    private func connect(to address: SocketAddress) {
        do {
            stream = try TLSStream.connect(on: loop, to: address, tls: request.tls, host: request.host, delegate: self)
        } catch {
            finish(.failure(.connect(error.name)))
            return
        }
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
        stream?.write(out)
    }

    func cancel() {
        finish(.failure(.cancelled))
    }

    private func finish(_ result: Result<HTTPClientResponse, HTTPClientError>) {
        guard let completion else { return }
        self.completion = nil
        timer?.close()
        timer = nil
        stream?.close()
        stream = nil
        completion(result)
        selfReference = nil
    }

    // MARK: ByteStreamDelegate

    func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        if let error {
            if let reason = stream.failureReason {
                finish(.failure(.tls(reason)))
            } else {
                finish(.failure(.connect(error.name)))
            }
            return
        }
        connected = true
        // Started once: reads do not restart it (see HTTPClientLimits).
        timer?.start(afterMilliseconds: limits.responseTimeoutMilliseconds)
        stream.startReading()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        if case .failed(let error) = parser.feed(bytes) {
            finish(.failure(.invalidResponse(error.reason)))
        }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        if error == nil && parser.messageNeedsEOF && parser.finish() == nil { return }
        finish(.failure(.closedEarly))
    }

    // MARK: HTTP1ParserDelegate

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        let head = parser.head
        status = head.statusCode
        headers = head.fields.map {
            HTTPField(name: String(decoding: head.name($0), as: UTF8.self), value: String(decoding: head.value($0), as: UTF8.self))
        }
        if let length = head.contentLength, length > UInt64(limits.maxBodyBytes) {
            finish(.failure(.bodyTooLarge(limit: limits.maxBodyBytes)))
        }
        return request.method == "HEAD" ? .none : .framed
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {
        guard completion != nil else { return }
        if body.count + bytes.count > limits.maxBodyBytes {
            finish(.failure(.bodyTooLarge(limit: limits.maxBodyBytes)))
            return
        }
        body.append(contentsOf: bytes)
    }

    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {}
    func parserDidFinishChunk(_ parser: HTTP1Parser) {}

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        // Interim 1xx answers precede the real one.
        if status >= 100 && status < 200 { return false }
        finish(.success(HTTPClientResponse(status: status, headers: headers, body: body)))
        return true
    }
}
