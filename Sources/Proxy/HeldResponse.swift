import ByteBuffers
import EventLoop
import HTTP1

/// The response as far as it came in the upstream read that carried its head, and every response
/// byte on its way to the client: held until that read is parsed to its end, so that bad
/// framing, or bytes past the response's end, in that read still become a clean 502 instead of
/// a response that looks complete. Once released, bytes go to the client as they come.
///
/// The one owner of that hold: the head is held here (`hold`), the bytes that follow join it
/// while it holds (`send`), and it ends either released to the client (`release`, the exchange's
/// held head counting as sent) or retracted (`retract`, the exchange awaiting a response again,
/// so that a failure is answered locally). It lives in the connection's `ExchangeWorkspace`, so
/// its buffer's capacity serves the connection's next responses and an idle connection holds none.
struct HeldResponse: ~Copyable {
    /// The held head and bytes; empty while nothing is held.
    private var bytes = ByteBuffer()
    /// A response head is held (its read is still being parsed).
    private(set) var isHolding = false

    /// Holds a response head, written by `writeHead`, until its read is parsed.
    @inline(__always)
    mutating func hold(writingHead writeHead: (inout ByteBuffer) -> Void) {
        bytes.clear()
        isHolding = true
        writeHead(&bytes)
    }

    /// Holds the upstream's response `head` as the client gets it (`ForwardedHead.writeResponse`);
    /// `cors`: the route's CORS fields, which replace the upstream's own, or nil. `viaSuffix` is
    /// `inout` only to be read in place (a connection's stored one): passed by value, it was
    /// retained and released around the call. It is not changed here.
    @inline(__always)
    mutating func holdHead(_ head: HTTPHead, framing: ForwardedHead.Framing, keepAlive: Bool, clientVersionMinor: UInt8,
                           viaSuffix: inout [UInt8], cors: [UInt8]?) {
        hold { out in
            if let cors {
                ForwardedHead.writeResponse(head, framing: framing, keepAlive: keepAlive, clientVersionMinor: clientVersionMinor,
                                            viaSuffix: viaSuffix, cors: cors, into: &out)
            } else {
                ForwardedHead.writeResponse(head, framing: framing, keepAlive: keepAlive, clientVersionMinor: clientVersionMinor,
                                            viaSuffix: viaSuffix, into: &out)
            }
        }
    }

    /// Response bytes for the client: held with the head while its read is parsed, written at
    /// once after.
    @inline(__always)
    mutating func send(_ piece: UnsafeRawBufferPointer, to stream: any ByteStream) {
        if isHolding {
            bytes.append(piece)
        } else {
            stream.write(piece)
        }
    }

    /// The line that starts a chunk of `size` bytes (the client's body is chunked), composed in
    /// `scratch` when it goes out at once.
    mutating func sendChunkStart(size: UInt64, to stream: any ByteStream, scratch: inout ByteBuffer) {
        if isHolding {
            bytes.appendHex(size)
            bytes.append("\r\n")
            return
        }
        scratch.clear()
        scratch.appendHex(size)
        scratch.append("\r\n")
        stream.write(scratch)
    }

    /// Sends what is held, once: the read that carried the head is parsed to its end (or the
    /// response ended, or became a tunnel). The exchange's held head counts as sent in any case.
    /// Returns whether a response was held.
    @discardableResult @inline(__always)
    mutating func release(to stream: any ByteStream, exchange: inout Exchange) -> Bool {
        _ = exchange.releaseHead()
        guard isHolding else { return false }
        isHolding = false
        stream.write(bytes)
        bytes.clear()
        return true
    }

    /// The read that carried the head went wrong before its end: nothing of the response reached
    /// the client, so the exchange can still answer it (502). False when part of it is out.
    mutating func retract(exchange: inout Exchange) -> Bool {
        guard isHolding else { return false }
        drop()
        exchange.responseRetracted()
        return true
    }

    /// Forgets what is held (the connection ends, or its workspace goes back to the worker).
    mutating func drop() {
        isHolding = false
        bytes.clear()
    }

    /// Ready for another connection: a buffer grown past `keptCapacity` is freed.
    mutating func reset(keptCapacity: Int) {
        drop()
        bytes.shrink(ifLargerThan: keptCapacity)
    }
}
