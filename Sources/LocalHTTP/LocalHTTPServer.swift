// The LocalHTTP module: a small HTTP/1.1 server on one loop for the relay's own endpoints (the
// admin listener, the demo's echo upstream, and next the login endpoints), and a router those
// endpoints register on (LocalRouter.swift). Each request, with its body, is answered by a
// handler, in order, with keep-alive; a handler may answer later, from another thread
// (LocalReply.swift). Not the proxy's request path; simplicity over speed.

import ByteBuffers
import EventLoop
import HTTP1

/// A request as the handler sees it.
public struct LocalRequest: Sendable {
    public var method: String
    /// As received, query included.
    public var target: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The target without its query.
    public var path: String { String(target.prefix { $0 != "?" }) }
}

public struct LocalResponse: Sendable {
    public var status: Int
    public var contentType: String
    /// Fields besides Content-Type, Content-Length, Cache-Control and Connection.
    public var headers: [(name: String, value: String)]
    public var body: String

    public init(status: Int, contentType: String = "application/json", headers: [(name: String, value: String)] = [],
                body: String) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }
}

public final class LocalHTTPServer {
    private let loop: EventLoop
    private var listener: TCPListener?
    private var connections: [ObjectIdentifier: LocalHTTPConnection] = [:]
    fileprivate let handler: (LocalRequest) -> LocalAnswer
    /// Where answers given later land (made with the first one).
    private var mailbox: LocalReplyMailbox?
    /// The connections waiting for an answer given later, by their number, with their deadline's
    /// timer (closed once the answer is written, or the connection closes).
    private var awaiting: [UInt64: (connection: LocalHTTPConnection, deadline: LoopTimer?)] = [:]
    private var connectionCount: UInt64 = 0
    /// The answer to a request the parser refused (the reason is safe to show).
    fileprivate let badRequest: (String) -> LocalResponse
    /// Bodies larger than this are refused (these endpoints take small ones).
    fileprivate let maxBodyBytes: Int

    public convenience init(loop: EventLoop, address: SocketAddress, maxBodyBytes: Int = 1 << 20,
                            badRequest: @escaping (String) -> LocalResponse,
                            handler: @escaping (LocalRequest) -> LocalResponse) throws(UVError) {
        try self.init(loop: loop, address: address, maxBodyBytes: maxBodyBytes, badRequest: badRequest,
                      answer: { .now(handler($0)) })
    }

    /// `answer`: a handler that may answer later (`LocalAnswer.later`).
    public init(loop: EventLoop, address: SocketAddress, maxBodyBytes: Int = 1 << 20,
                badRequest: @escaping (String) -> LocalResponse,
                answer handler: @escaping (LocalRequest) -> LocalAnswer) throws(UVError) {
        self.loop = loop
        self.handler = handler
        self.badRequest = badRequest
        self.maxBodyBytes = maxBodyBytes
        listener = try TCPListener(loop: loop, address: address, reusePort: false) { [unowned self] stream in
            connectionCount += 1
            let connection = LocalHTTPConnection(stream: stream, server: self, number: connectionCount)
            self.connections[ObjectIdentifier(connection)] = connection
        }
    }

    public var boundAddress: SocketAddress? { listener?.localAddress }

    /// Stops listening and closes every connection.
    public func close() {
        listener?.close()
        listener = nil
        mailbox?.close()
        mailbox = nil
        for waiting in awaiting.values { waiting.deadline?.close() }
        awaiting.removeAll()
        for connection in connections.values { connection.stream.close() }
    }

    fileprivate func connectionDidClose(_ connection: LocalHTTPConnection) {
        connections.removeValue(forKey: ObjectIdentifier(connection))
        awaiting.removeValue(forKey: connection.number)?.deadline?.close()
    }

    /// A reply for `connection`, to be sent later (from any thread); with `deadline`, a timer
    /// sends its response through the reply unless the handler's answer came first.
    fileprivate func reply(for connection: LocalHTTPConnection, deadline: LocalDeadline?) -> LocalReply? {
        if mailbox == nil, listener != nil {
            mailbox = LocalReplyMailbox(loop: loop) { [unowned self] number, response in
                guard let waiting = awaiting.removeValue(forKey: number) else { return }
                waiting.deadline?.close()
                waiting.connection.answerGivenLater(response)
            }
        }
        guard let mailbox else { return nil }
        let reply = LocalReply(mailbox: mailbox, connection: connection.number)
        let timer = deadline.map { deadline in
            let timer = LoopTimer(loop: loop) { reply.send(deadline.response) }
            timer.start(afterMilliseconds: deadline.milliseconds)
            return timer
        }
        awaiting[connection.number] = (connection, timer)
        return reply
    }
}

private final class LocalHTTPConnection: ByteStreamDelegate, HTTP1ParserDelegate {
    let stream: TCPStream
    /// Weak: `LocalHTTPServer.close()` only starts closing its connections, and the server may
    /// be gone by the time a close completes (the stream keeps its connection alive till then).
    weak var server: LocalHTTPServer?
    /// Unique among the server's connections.
    let number: UInt64
    private let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 64 * 1024, maxFieldCount: 100))
    private var request = LocalRequest(method: "", target: "", headers: [], body: [])
    private var out = ByteBuffer()
    /// Waiting for an answer given later: reading stops, and the bytes read past the request
    /// (pipelined requests) wait here.
    private var later: (keepAlive: Bool, unparsed: [UInt8])?

    init(stream: TCPStream, server: LocalHTTPServer, number: UInt64) {
        self.stream = stream
        self.server = server
        self.number = number
        parser.delegate = self
        stream.delegate = self
        stream.startReading()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        switch parser.feed(bytes) {
        case .failed(let error):
            var answer = server?.badRequest(error.reason) ?? LocalResponse(status: 400, contentType: "text/plain", body: "")
            answer.status = 400
            respond(answer, keepAlive: false)
        case .paused(let consumed):
            // Paused only for an answer given later (`parserDidFinishMessage`).
            later?.unparsed = Array(bytes[consumed...])
        default:
            break
        }
    }

    /// The answer a handler gave later: written, then the requests read meanwhile are parsed and
    /// reading resumes.
    func answerGivenLater(_ response: LocalResponse) {
        guard let (keepAlive, unparsed) = later else { return }
        later = nil
        respond(response, keepAlive: keepAlive)
        guard keepAlive else { return }
        parser.resume()
        if !unparsed.isEmpty {
            unparsed.withUnsafeBytes { self.stream(stream, didRead: $0) }
        }
        if later == nil { stream.startReading() }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) { stream.close() }

    func streamDidClose(_ stream: any ByteStream) { server?.connectionDidClose(self) }

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        let head = parser.head
        func text(_ bytes: UnsafeRawBufferPointer) -> String { String(decoding: bytes, as: UTF8.self) }
        request = LocalRequest(method: text(head.methodName), target: text(head.target),
                               headers: head.fields.map { (text(head.name($0)), text(head.value($0))) }, body: [])
        return .framed
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {
        if let server, request.body.count + bytes.count <= server.maxBodyBytes { request.body.append(contentsOf: bytes) }
    }

    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {}
    func parserDidFinishChunk(_ parser: HTTP1Parser) {}

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        guard let server else {
            stream.close()
            return false
        }
        switch server.handler(request) {
        case .now(let response):
            respond(response, keepAlive: parser.head.keepAlive)
            return false
        case .later(let start):
            return answerLater(start, deadline: nil, server: server)
        case .laterWithin(let deadline, let start):
            return answerLater(start, deadline: deadline, server: server)
        }
    }

    /// Stops reading until the answer given later is written (true: the parser pauses).
    private func answerLater(_ start: (LocalReply) -> Void, deadline: LocalDeadline?, server: LocalHTTPServer) -> Bool {
        guard let reply = server.reply(for: self, deadline: deadline) else {
            stream.close()
            return false
        }
        later = (parser.head.keepAlive, [])
        stream.stopReading()
        start(reply)
        return true
    }

    private func respond(_ response: LocalResponse, keepAlive: Bool) {
        out.clear()
        out.appendStatusLine(response.status)
        out.appendField("Content-Type", response.contentType)
        for field in response.headers { out.appendField(field.name, field.value) }
        out.appendField("Cache-Control", "no-store")
        out.appendContentLength(UInt64(response.body.utf8.count))
        if !keepAlive { out.appendField("Connection", "close") }
        out.appendEndOfHead()
        out.append(utf8: response.body)
        stream.write(out)
        if !keepAlive { stream.closeAfterWrites() }
    }
}
