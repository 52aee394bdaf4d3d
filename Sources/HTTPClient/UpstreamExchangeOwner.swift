import EventLoop
import HTTP1

/// What an upstream connection reports to the exchange it serves (a proxied client's, or
/// `sendHTTPRequest`'s own): the parsed response, the ends of the reads that carried it, its
/// failure, and once the upstream switched protocols, the tunnel's bytes. All calls happen on the loop's thread, while the
/// connection holds its owner (`begin(for:)` to the end of the exchange).
///
/// A protocol rather than the client connection itself, so the upstream side names what it needs
/// and nothing more; class-bound, so a call costs one witness-table load and no boxing.
public protocol UpstreamExchangeOwner: AnyObject {
    /// The response head (or an interim one): how the parser goes on with its body.
    func upstream(_ upstream: UpstreamConnection, didReceiveHead head: HTTPHead) -> HTTP1Parser.BodyExpectation
    func upstream(_ upstream: UpstreamConnection, didReceiveBody bytes: UnsafeRawBufferPointer)
    func upstream(_ upstream: UpstreamConnection, didStartChunkOfSize size: UInt64)
    func upstreamDidFinishChunk(_ upstream: UpstreamConnection)
    /// A response message ended; returns whether the parser stops (false: an interim response
    /// ended, the final one follows).
    func upstreamDidFinishMessage(_ upstream: UpstreamConnection) -> Bool

    /// A read was parsed to its end and the response goes on: what the read carried of it may go
    /// to the client now.
    func upstreamDidParseRead(_ upstream: UpstreamConnection)
    /// Bytes followed the complete response in the read that carried it: returns whether nothing
    /// of the response reached the client yet, so that the exchange can still answer 502.
    func upstreamReadOverran(_ upstream: UpstreamConnection) -> Bool
    /// The response is complete and the read that completed it parsed to its end.
    func upstreamDidFinishResponse(_ upstream: UpstreamConnection)
    /// The exchange failed before the response was complete; the connection is closed.
    func upstream(_ upstream: UpstreamConnection, didFail failure: ConnectionFailure)
    /// The upstream's write backlog drained (the request body may flow again).
    func upstreamDidDrain(_ upstream: UpstreamConnection)

    /// The upstream switched protocols (101); `bytes` followed the response in the same read.
    func upstream(_ upstream: UpstreamConnection, didUpgradeWith bytes: UnsafeRawBufferPointer)
    func upstreamTunnel(_ upstream: UpstreamConnection, didRead bytes: UnsafeRawBufferPointer)
    func upstreamTunnelDidEnd(_ upstream: UpstreamConnection)

    /// The response body's next bytes (`remaining` of a body framed by Content-Length are due)
    /// may be spliced from the upstream's socket to the returned one, bypassing the parser and
    /// the owner's `didReceiveBody`; nil while they must be read (SpliceRelay.swift).
    func upstream(_ upstream: UpstreamConnection, spliceSinkForBody remaining: UInt64) -> TCPStream?
    /// `count` body bytes were spliced to the sink the owner named (sent or queued there).
    func upstream(_ upstream: UpstreamConnection, didSpliceBody count: Int)
}

extension UpstreamExchangeOwner {
    public func upstream(_ upstream: UpstreamConnection, spliceSinkForBody remaining: UInt64) -> TCPStream? { nil }
    public func upstream(_ upstream: UpstreamConnection, didSpliceBody count: Int) {}
}

extension UpstreamExchangeOwner {
    /// Calls `call` with the owner at `object`, an instance of this type, without retaining it:
    /// for `UpstreamConnection.callOwner`, while a read holds the owner.
    @inline(__always)
    static func withUnretained<Result>(_ object: UnsafeMutableRawPointer, _ call: (any UpstreamExchangeOwner) -> Result) -> Result {
        Unmanaged<Self>.fromOpaque(object)._withUnsafeGuaranteedRef { call($0) }
    }
}
