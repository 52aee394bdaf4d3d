// AdminServer: the operator's listener (`admin`, loopback by default), on the main thread's
// loop beside the signal watchers, so it never shares a worker with client traffic.
//
//   GET    /healthz                    200 while the process serves
//   GET    /readyz                     200 once every non-interactive identity holds a valid
//                                      token (the listeners are bound before this server
//                                      starts); else 503 naming what is missing
//   GET    /identities                 each identity's grant, state, expiry and last error —
//                                      never a token or a secret
//   POST   /identities/NAME/refresh    fetch a new token now (202)
//   DELETE /identities/NAME/token      forget the token and refresh token (204)
//
// Answers are JSON; errors are problem+json like the relay's own.

import ByteBuffers
import Config
import EventLoop
import HTTP1
import OAuth2
import Tokens

public final class AdminServer {
    private let loop: EventLoop
    private let config: RelayConfig
    private let tokens: TokenService?
    private var listener: TCPListener?
    private var connections: [ObjectIdentifier: AdminConnection] = [:]

    public init(loop: EventLoop, address: SocketAddress, config: RelayConfig, tokens: TokenService?) throws(UVError) {
        self.loop = loop
        self.config = config
        self.tokens = tokens
        listener = try TCPListener(loop: loop, address: address, reusePort: false) { [unowned self] stream in
            let connection = AdminConnection(stream: stream, server: self)
            self.connections[ObjectIdentifier(connection)] = connection
        }
    }

    public var boundAddress: SocketAddress? { listener?.localAddress }

    /// Stops listening and closes the admin connections.
    public func close() {
        listener?.close()
        listener = nil
        for connection in connections.values { connection.stream.close() }
    }

    fileprivate func connectionDidClose(_ connection: AdminConnection) {
        connections.removeValue(forKey: ObjectIdentifier(connection))
    }

    /// The answer to one admin request: status, content type and body.
    fileprivate func answer(method: String, path: String) -> (Int, String, String) {
        let now = monotonicSeconds()
        switch (method, path) {
        case ("GET", "/healthz"):
            return (200, "application/json", "{\"status\":\"serving\"}\n")
        case ("GET", "/readyz"):
            let missing = (tokens?.identities ?? [])
                .filter { !$0.identity.grant.isInteractive && !$0.status(at: now).hasValidToken }
                .map(\.identity.name)
            if missing.isEmpty { return (200, "application/json", "{\"status\":\"ready\"}\n") }
            return problem(503, "not-ready", "Service Unavailable",
                           "identities without a valid token yet: \(missing.joined(separator: ", "))")
        case ("GET", "/identities"):
            let entries = (tokens?.identities ?? []).map { describe($0, now: now) }
            return (200, "application/json", "{\"identities\":[\(entries.joined(separator: ","))]}\n")
        default:
            break
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[1] == "identities", let tokens else {
            return problem(404, "not-found", "Not Found", "no admin endpoint \(path)")
        }
        guard let index = tokens.index(of: String(parts[2])) else {
            return problem(404, "unknown-identity", "Not Found", "no identity named \(parts[2])")
        }
        switch (method, parts[3]) {
        case ("POST", "refresh"):
            tokens.refreshNow(index)
            return (202, "application/json", "{\"identity\":\(JSONText.quote(String(parts[2]))),\"refresh\":\"started\"}\n")
        case ("DELETE", "token"):
            tokens.forget(index)
            return (204, "application/json", "")
        case (_, "refresh"), (_, "token"):
            return problem(405, "method-not-allowed", "Method Not Allowed", "\(method) is not allowed on \(path)")
        default:
            return problem(404, "not-found", "Not Found", "no admin endpoint \(path)")
        }
    }

    private func describe(_ identity: IdentityTokens, now: Double) -> String {
        let status = identity.status(at: now)
        var fields = [
            "\"name\":\(JSONText.quote(identity.identity.name))",
            "\"grant\":\(JSONText.quote(identity.identity.grant.grantType))",
            "\"state\":\(JSONText.quote(status.state.rawValue))",
            "\"hasValidToken\":\(status.hasValidToken)",
            "\"hasRefreshToken\":\(status.hasRefreshToken)",
            "\"consecutiveFailures\":\(status.consecutiveFailures)",
        ]
        if let seconds = status.expiresInSeconds { fields.append("\"expiresInSeconds\":\(Int(seconds.rounded(.down)))") }
        if let scope = status.scope { fields.append("\"scope\":\(JSONText.quote(scope))") }
        if let code = status.lastErrorCode {
            fields.append("\"lastError\":{\"code\":\(JSONText.quote(code))"
                          + (status.lastErrorDescription.map { ",\"description\":\(JSONText.quote($0))" } ?? "") + "}")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    private func problem(_ status: Int, _ slug: String, _ title: String, _ detail: String) -> (Int, String, String) {
        (status, "application/problem+json", Problem(status: status, slug: slug, title: title, detail: detail).json() + "\n")
    }
}

/// One admin client connection: requests answered in order, keep-alive.
private final class AdminConnection: ByteStreamDelegate, HTTP1ParserDelegate {
    let stream: TCPStream
    unowned let server: AdminServer
    private let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 16 * 1024, maxFieldCount: 64))
    private var method = ""
    private var path = ""
    private var out = ByteBuffer()

    init(stream: TCPStream, server: AdminServer) {
        self.stream = stream
        self.server = server
        parser.delegate = self
        stream.delegate = self
        stream.startReading()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        if case .failed = parser.feed(bytes) {
            respond(400, "application/problem+json",
                    Problem.badRequest("malformed admin request").json() + "\n", keepAlive: false)
        }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) { stream.close() }

    func streamDidClose(_ stream: any ByteStream) { server.connectionDidClose(self) }

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        method = String(decoding: parser.head.methodName, as: UTF8.self)
        let target = String(decoding: parser.head.target, as: UTF8.self)
        path = String(target.prefix { $0 != "?" })
        return .framed
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {}
    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {}
    func parserDidFinishChunk(_ parser: HTTP1Parser) {}

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        let (status, type, body) = server.answer(method: method, path: path)
        respond(status, type, body, keepAlive: parser.head.keepAlive)
        return false
    }

    private func respond(_ status: Int, _ type: String, _ body: String, keepAlive: Bool) {
        out.clear()
        out.append("HTTP/1.1 ")
        out.appendDecimal(status)
        out.append(status == 200 ? " OK" : status == 202 ? " Accepted" : status == 204 ? " No Content" : " Error")
        out.append("\r\nContent-Type: ")
        out.append(type)
        out.append("\r\nCache-Control: no-store\r\nContent-Length: ")
        out.appendDecimal(body.utf8.count)
        out.append(keepAlive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n")
        out.append(body)
        stream.write(out)
        if !keepAlive { stream.closeAfterWrites() }
    }
}
