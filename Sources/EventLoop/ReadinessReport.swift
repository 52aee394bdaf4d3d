// Readiness reports: a stream whose delegate receives itself (a TLS stream lets OpenSSL receive
// into its record buffer, see TLSStream.swift). As for splicing (SpliceRelay.swift), the stream's
// read-buffer callback offers libuv an empty buffer, so libuv reports `UV_ENOBUFS` instead of
// reading (uv__read in libuv 1.x); the stream passes that on as `streamIsReadable`, and the
// delegate calls `receive(into:)`. Epoll is level-triggered: bytes left in the socket, or its
// end, are reported again. During a lingering close the stream reads and discards as usual.

import Glibc

extension TCPStream {
    /// What one `receive(into:)` got.
    public enum Receipt: Equatable {
        /// This many bytes, at the start of the space.
        case received(Int)
        /// Nothing now: the socket is empty, or the stream is not reading (stopped, closed, or
        /// in its lingering close). Readiness is reported again when there is more to read.
        case wouldBlock
        /// The peer closed its side.
        case ended
        case failed(UVError)
    }

    /// One non-blocking receive from the socket into `space`, for the delegate of a stream that
    /// `reportsReadiness`. Nothing is received once reading has stopped, so back-pressure
    /// holds. An end or error is the caller's to report (reading is not stopped here); the
    /// caller that cannot act on it yet may leave it: an ended socket stays readable, and
    /// receives 0 again.
    public func receive(into space: UnsafeMutableRawBufferPointer) -> Receipt {
        guard isReading, !lingering, !isClosed, let base = space.baseAddress, space.count > 0 else { return .wouldBlock }
        let socket = fileDescriptor
        while true {
            let count = Glibc.read(socket, base, space.count)
            if count > 0 { return .received(count) }
            if count == 0 { return .ended }
            let error = errno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
            return .failed(UVError(-error))
        }
    }

    /// Nothing of the peer's waits in the socket: it is empty, ended, or failed (a peek that
    /// takes nothing; for `closeAfterWritesUnlessPeerSends`).
    func nothingWaitsToBeRead() -> Bool {
        var byte: UInt8 = 0
        while true {
            let count = Glibc.recv(fileDescriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            if count > 0 { return false }
            if count < 0 && errno == EINTR { continue }
            return true
        }
    }
}
