import ByteBuffers
import EventLoop
import HTTP1

/// The upstream's response on its way to one client, piece by piece as the exchange decided:
/// interim heads, the head as the client gets it, body bytes (inside chunks of the relay's own
/// where the upstream delimited its body by closing), chunk boundaries written anew, and the last
/// chunk. Everything after an interim head goes through the held response (`HeldResponse`), so
/// that the read that carried the head can still be retracted. It lives in the connection's
/// workspace, so its buffer serves the connection's next responses; the client connection hands
/// it the exchange's answers and its socket, and keeps none of these bytes itself.
struct ResponseRelay: ~Copyable {
    private var held = HeldResponse()

    /// A response head is held (its read is still being parsed).
    var isHolding: Bool { held.isHolding }

    /// An interim response (`Exchange.ResponseHeadAction.relayInterim`) goes out at once.
    mutating func relayInterim(_ head: HTTPHead, to client: any ByteStream, scratch: inout ByteBuffer) {
        scratch.clear()
        ForwardedHead.writeInterim(head, into: &scratch)
        client.write(scratch)
    }

    /// Holds the response head as the client gets it (`Exchange.ResponseHeadAction.respond`):
    /// `HeldResponse.holdHead`, with the route's CORS fields `cors` in place of the upstream's.
    @inline(__always)
    mutating func holdHead(_ head: HTTPHead, framing: ForwardedHead.Framing, keepAlive: Bool, clientVersionMinor: UInt8,
                           viaSuffix: inout [UInt8], cors: [UInt8]?) {
        held.holdHead(head, framing: framing, keepAlive: keepAlive, clientVersionMinor: clientVersionMinor, viaSuffix: &viaSuffix,
                      cors: cors)
    }

    /// Response body bytes, as `Exchange.responseBody` said (not `.drop`).
    @inline(__always)
    mutating func body(_ bytes: UnsafeRawBufferPointer, as how: ExchangeResponse.Bytes, to client: any ByteStream,
                       scratch: inout ByteBuffer) {
        if case .writeAsChunk = how {
            held.sendChunkStart(size: UInt64(bytes.count), to: client, scratch: &scratch)
            held.send(bytes, to: client)
            held.send(staticBytes("\r\n"), to: client)
        } else {
            held.send(bytes, to: client)
        }
    }

    /// The upstream started a chunk of `size` bytes, relayed as a chunk of the client's body.
    mutating func chunkStarts(size: UInt64, to client: any ByteStream, scratch: inout ByteBuffer) {
        held.sendChunkStart(size: size, to: client, scratch: &scratch)
    }

    mutating func chunkEnds(to client: any ByteStream) {
        held.send(staticBytes("\r\n"), to: client)
    }

    /// The chunked body's end: the upstream's trailers (`upstreamHead` holds them) or an empty
    /// last chunk of the relay's own.
    mutating func lastChunk(_ last: ExchangeResponse.LastChunk, trailersOf upstreamHead: HTTPHead, to client: any ByteStream,
                            scratch: inout ByteBuffer) {
        switch last {
        case .none:
            break
        case .upstreamTrailers:
            scratch.clear()
            ForwardedHead.writeLastChunk(trailersOf: upstreamHead, into: &scratch)
            held.send(scratch.readableBytes, to: client)
        case .empty:
            held.send(staticBytes("0\r\n\r\n"), to: client)
        }
    }

    /// Sends what is held (`HeldResponse.release`); returns whether a response was held.
    @discardableResult @inline(__always)
    mutating func release(to client: any ByteStream, exchange: inout Exchange) -> Bool {
        held.release(to: client, exchange: &exchange)
    }

    /// The read that carried the head went wrong before its end (`HeldResponse.retract`).
    mutating func retract(exchange: inout Exchange) -> Bool {
        held.retract(exchange: &exchange)
    }

    /// A failure or a timeout ends the response: retracted if nothing of it is out, else forgotten.
    mutating func abandon(exchange: inout Exchange) {
        if !held.retract(exchange: &exchange) { held.drop() }
    }

    /// Ready for another connection: a buffer grown past `keptCapacity` is freed.
    mutating func reset(keptCapacity: Int) {
        held.reset(keptCapacity: keptCapacity)
    }
}
