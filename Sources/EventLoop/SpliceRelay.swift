// SpliceRelay: body bytes moved from one plain TCP socket to another inside the kernel
// (splice(2) through a pipe), for a proxy whose user space has no use for them. A read copies
// each byte out of the kernel and the write copies it back in; splice moves the socket
// buffer's pages into a pipe and from the pipe to the other socket.
//
// libuv keeps each socket's epoll registration. A stream with a `SpliceAdvisor` gets libuv's
// readiness without libuv reading: its read-buffer callback offers an empty buffer, so libuv
// reports `UV_ENOBUFS` instead of reading (uv__read in libuv 1.x), and the stream then asks its
// advisor whether the readable bytes may be spliced, and how many; if not, it reads them itself
// as libuv would have. Epoll is level-triggered, so bytes left in the socket are reported again.
//
// The loop's one pipe is empty between calls: what the receiving socket does not take at once
// is read back out of the pipe and queued as an ordinary write (whose back-pressure then holds
// the source until it drains). The receiving stream is spliced to only while nothing waits in
// its queue, so the order of its bytes holds.

internal import CLibUV
import Glibc

/// The owner of a stream whose readable bytes may bypass user space. Called on the loop's thread.
public protocol SpliceAdvisor: AnyObject {
    /// Where the readable bytes of `stream` may go by splice, and at most how many; nil to have
    /// them read and delivered to the delegate as usual.
    func spliceTarget(for stream: TCPStream) -> SpliceTarget?
    /// `count` bytes of `stream` went on to the target (sent, or queued in its write backlog).
    func stream(_ stream: TCPStream, didSplice count: Int)
}

public struct SpliceTarget {
    public let sink: TCPStream
    public let maxBytes: Int

    public init(sink: TCPStream, maxBytes: Int) {
        self.sink = sink
        self.maxBytes = maxBytes
    }
}

/// The loop's pipe, made at its first splice. Its file descriptors close with the loop.
final class SplicePipe {
    let readEnd: Int32
    let writeEnd: Int32
    /// The pipe's capacity, and so the most one splice moves.
    let capacity: Int
    /// Asked of the system: a socket's splice fills one pipe slot per packet fragment, so the
    /// default 16 slots (64 KiB) often take less than a read would; more slots, fewer splices.
    static let requestedCapacity: Int32 = 256 * 1024

    init?() {
        var fds: (Int32, Int32) = (-1, -1)
        let rc = withUnsafeMutableBytes(of: &fds) { relay_pipe2_nonblocking($0.baseAddress!.assumingMemoryBound(to: Int32.self)) }
        guard rc == 0 else { return nil }
        readEnd = fds.0
        writeEnd = fds.1
        // Best effort: a refusal (over /proc/sys/fs/pipe-max-size) keeps the default.
        let size = fcntl(writeEnd, Int32(relay_setpipe_size), Self.requestedCapacity)
        capacity = size > 0 ? Int(size) : 64 * 1024
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// What one splice from a socket did.
    enum Outcome: Equatable {
        /// `moved` bytes left the source; `stranded` of them stay in the pipe (the sink took the rest).
        case moved(Int, stranded: Int)
        /// Nothing to read after all.
        case wouldBlock
        /// The peer closed its side.
        case ended
        /// The source failed (`errno`); the pipe is empty.
        case failed(Int32)
    }

    /// Moves at most `count` bytes from `source` to `sink` through the pipe, once.
    func move(from source: Int32, to sink: Int32, atMost count: Int) -> Outcome {
        let flags = UInt32(relay_splice_move | relay_splice_nonblock)
        let moved = relay_splice(source, writeEnd, min(count, capacity), flags)
        if moved == 0 { return .ended }
        if moved < 0 {
            let error = errno
            return error == EAGAIN || error == EINTR ? .wouldBlock : .failed(error)
        }
        // A failed or short splice to the sink leaves bytes in the pipe; they go by write.
        let sent = max(0, relay_splice(readEnd, sink, moved, flags))
        return .moved(moved, stranded: moved - sent)
    }

    /// Empties the pipe, its bytes dropped.
    func discardAll() {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while scratch.withUnsafeMutableBytes({ Glibc.read(readEnd, $0.baseAddress!, $0.count) }) > 0 {}
    }

    /// Reads `count` bytes of what stayed in the pipe into `buffer`.
    func drain(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        var read = 0
        while read < count {
            let n = Glibc.read(readEnd, buffer + read, count - read)
            if n <= 0 { break }
            read += n
        }
        return read
    }
}

extension EventLoop {
    /// The loop's splice pipe, made on first use; nil if the system refused one.
    var splicePipe: SplicePipe? {
        if let pipe = splicePipeStorage { return pipe }
        splicePipeStorage = SplicePipe()
        return splicePipeStorage
    }
}

extension TCPStream {
    /// Nothing waits in the write queue and the stream is open and connected: bytes spliced to
    /// it now come after everything written before.
    var takesSplicedBytes: Bool { queuedBytes == 0 && isWritable }

    var fileDescriptor: Int32 {
        var fd: uv_os_fd_t = -1
        _ = uv_fileno(UnsafeMutablePointer(OpaquePointer(handle)), &fd)
        return fd
    }

    /// libuv reported the socket readable without reading (`UV_ENOBUFS`): splice what the
    /// advisor allows, or read as libuv would have. Like libuv's reads, it goes on while the
    /// sink takes everything, until the socket is empty, a bounded number of times, asking the
    /// advisor before each (one readiness report costs more than a splice that finds nothing).
    func readableWithoutRead(advisor: any SpliceAdvisor) {
        for round in 0..<Self.splicesPerWakeup {
            // A lingering stream reads and discards (and so learns that the peer sent more).
            guard isReading, !isClosed, !lingering, let target = advisor.spliceTarget(for: self), target.maxBytes > 0,
                  target.sink.takesSplicedBytes, let pipe = loop.splicePipe else {
                if round == 0 { readDirectly() }
                return
            }
            let sink = target.sink
            switch pipe.move(from: fileDescriptor, to: sink.fileDescriptor, atMost: target.maxBytes) {
            case .moved(let moved, let stranded):
                var left = stranded
                while left > 0 {
                    let count = pipe.drain(into: loop.readBuffer, count: min(left, EventLoop.readBufferSize))
                    if count == 0 { break }
                    sink.write(UnsafeRawBufferPointer(start: loop.readBuffer, count: count))
                    left -= count
                }
                guard left == 0 else {
                    // The pipe would not give back what it holds: the body cannot go on whole,
                    // and the loop's next splice, whoever's, must not start behind stray bytes.
                    pipe.discardAll()
                    deliverRead(-Int(EIO))
                    return
                }
                advisor.stream(self, didSplice: moved)
                if stranded > 0 { return }
            case .wouldBlock:
                return
            case .ended:
                deliverRead(Int(UV_EOF.rawValue))
                return
            case .failed(let error):
                deliverRead(-Int(error))
                return
            }
        }
    }

    /// At most this many splices per readiness report (libuv reads up to 32 times).
    static let splicesPerWakeup = 16

    /// One read into the loop's buffer, delivered as libuv delivers its reads.
    func readDirectly() {
        let n = Glibc.read(fileDescriptor, loop.readBuffer, EventLoop.readBufferSize)
        if n > 0 {
            deliverRead(n)
        } else if n == 0 {
            deliverRead(Int(UV_EOF.rawValue))
        } else {
            let error = errno
            if error != EAGAIN && error != EINTR { deliverRead(-Int(error)) }
        }
    }
}
