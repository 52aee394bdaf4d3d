// A client connection on the forward-proxy listener: its heads are placed by
// `ForwardPlacement` first; a `CONNECT` it takes hands the socket on, once the parser has
// stopped after the head, to a `ConnectTunnel` (bytes both ways) or, for a host a route names,
// to a new `ClientConnection` over TLS completed with the host's leaf (`forwardSide.role` is then
// `.intercepting`). The connection that read the `CONNECT` retires without closing the socket.

import EventLoop
import HTTP1
import TLS
import TLSStream

/// What a client connection of the forward proxy knows beyond an HTTP connection's state. A
/// class: the reverse listeners' connections test one reference for nil, and nothing is copied.
final class ForwardSide {
    enum Role {
        /// On the forward listener: absolute-form requests and `CONNECT`.
        case listener
        /// Inside an intercepted `CONNECT` to `target`: requests for that host only.
        case intercepting(ForwardPlacement.ConnectTarget)
    }

    /// A `CONNECT` taken, waiting for the parser to stop after its head.
    enum Taken {
        case tunnel(ForwardPlacement.ConnectTarget)
        case intercept(ForwardPlacement.ConnectTarget, TLSConfiguration)
    }

    let role: Role
    var taken: Taken?

    init(role: Role) {
        self.role = role
    }
}

extension RequestLeg {
    /// The forward proxy's decision on a head; nil: on to the routes (`RequestPlacement`, the
    /// host vouched for).
    func placeOnForwardProxy(_ head: HTTPHead, side: ForwardSide) -> Exchange.HeadAction? {
        let connection = self.connection
        // `forward` is restart-only: the settings of a forward listener always have it.
        guard let forward = connection.settings.forward else { return connection.exchange.refused(.notAbsoluteForm(), closing: true) }
        let placement = ForwardPlacement(forward: forward)
        let decision: ForwardPlacement.Decision
        switch side.role {
        case .intercepting(let target):
            decision = placement.placeIntercepted(head, on: target)
        case .listener:
            decision = placement.place(head)
        }
        switch decision {
        case .routes:
            return nil
        case .answer(let problem, let closing):
            return connection.exchange.refused(problem, closing: closing)
        case .tunnel(let target):
            connection.forwardSide?.taken = .tunnel(target)
            return connection.exchange.connectTaken()
        case .intercept(let target):
            guard let tls = connection.settings.forward?.leaves?.serverConfiguration(forHost: target.host) else {
                connection.worker.logger.warning("no certificate for an intercepted host", metadata: ["target": .string(target.description)])
                return connection.exchange.refused(.noInterceptionLeaf(target), closing: true)
            }
            connection.forwardSide?.taken = .intercept(target, tls)
            return connection.exchange.connectTaken()
        }
    }
}

extension ClientConnection {
    /// `HTTP/1.1 200 Connection established`, the answer to a `CONNECT` taken.
    static let connectionEstablished = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    /// Hands the socket of a `CONNECT` taken on; `received`: the bytes the client sent after
    /// the head, which go first to the tunnel's other side (or into the TLS handshake).
    func handOff(_ taken: ForwardSide.Taken, received: UnsafeRawBufferPointer) {
        withExtendedLifetime(self) {
            let pipelined = Array(received)
            retire()
            // Only the forward listener's own connections take a `CONNECT`, and they are plain
            // TCP: inside an intercepted one (TLS) `placeIntercepted` sends every head to the
            // routes, which answer `CONNECT` 405. A TLS stream here would leak its budget place.
            guard let tcp = stream as? TCPStream else { preconditionFailure("a CONNECT taken on a connection that is not plain TCP") }
            switch taken {
            case .tunnel(let target):
                worker.openTunnel(client: tcp, to: target, pipelined: pipelined)
            case .intercept(let target, let tls):
                Self.connectionEstablished.withUnsafeBytes { tcp.write($0) }
                let tlsStream = pipelined.withUnsafeBytes { TLSStream.accept(tcp, configuration: tls, receivedBytes: $0) }
                worker.acceptIntercepted(tlsStream, target: target)
            }
        }
    }

    /// Ends this connection's part without closing its socket: its timer, legs and workspace
    /// go, and the worker forgets it (the connection's place in `limits.maxConnections` passes
    /// to what takes the socket).
    private func retire() {
        releaseExchangeParts()
        stream.delegate = nil
        worker.connectionHandedOff(self)
    }
}
