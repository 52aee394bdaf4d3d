import ByteBuffers
@testable import EventLoop
#if canImport(Glibc)
import Glibc
#endif
import LoopTestSupport
import XCTest

/// The heap `object` takes: its malloc chunk, the usable size and the 8 bytes of glibc's size
/// field (objects the relay holds per connection are sized against malloc's 16-byte classes).
/// (`malloc_usable_size` is glibc's, declared in a header the Glibc module does not import.)
func heapBytes(of object: AnyObject) -> Int {
    typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int
    guard let symbol = dlsym(nil, "malloc_usable_size") else { preconditionFailure("no malloc_usable_size") }
    return unsafeBitCast(symbol, to: UsableSize.self)(Unmanaged.passUnretained(object).toOpaque()) + 8
}

/// Records what a `TCPStream` reports to its delegate.
final class StreamRecorder: ByteStreamDelegate {
    /// Every byte read, in order (a `ByteBuffer`: megabytes arrive, and it copies with memcpy).
    var received = ByteBuffer()
    /// Set once the stream connected: nil on success, else the error.
    var connectResult: UVError??
    /// Set once the stream ended: nil for the peer's FIN, else the error.
    var endResult: UVError??
    /// How many bytes had arrived when the stream ended.
    var receivedAtEnd: Int?
    var drainCount = 0
    var isClosed = false
    /// Called with each read, e.g. to answer from inside the read callback.
    var onRead: ((any ByteStream, UnsafeRawBufferPointer) -> Void)?

    var receivedText: String { String(decoding: received.readableBytes, as: UTF8.self) }

    /// Whether exactly `bytes` arrived.
    func received(_ bytes: [UInt8]) -> Bool {
        guard received.count == bytes.count else { return false }
        return bytes.isEmpty || bytes.withUnsafeBytes { memcmp($0.baseAddress!, received.baseAddress!, bytes.count) == 0 }
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        received.append(bytes)
        onRead?(stream, bytes)
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        endResult = .some(error)
        receivedAtEnd = received.count
    }

    func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        connectResult = .some(error)
    }

    func streamDidDrain(_ stream: any ByteStream) {
        drainCount += 1
    }

    func streamDidClose(_ stream: any ByteStream) {
        isClosed = true
    }
}

/// A listener on `127.0.0.1` at a port the kernel picks, and the streams it accepts, each
/// given a fresh recorder as delegate.
final class LoopbackServer {
    let listener: TCPListener
    let address: SocketAddress
    private(set) var accepted: [(stream: TCPStream, recorder: StreamRecorder)] = []

    /// `onRead` is given to each accepted stream's recorder, to answer from the read callback.
    init(on loop: EventLoop, startReading: Bool = true, onRead: ((any ByteStream, UnsafeRawBufferPointer) -> Void)? = nil) throws {
        let any = try XCTUnwrap(SocketAddress(ip: "127.0.0.1", port: 0))
        weak var server: LoopbackServer?
        listener = try TCPListener(loop: loop, address: any, reusePort: false) { stream in
            let recorder = StreamRecorder()
            recorder.onRead = onRead
            stream.delegate = recorder
            if startReading { stream.startReading() }
            server?.accepted.append((stream, recorder))
        }
        address = try XCTUnwrap(listener.localAddress)
        server = self
    }
}

/// `count` bytes of a pattern that does not repeat at any power-of-two period, so a lost,
/// duplicated or reordered piece shows.
func patternBytes(_ count: Int) -> [UInt8] {
    let period = (0..<251).map { UInt8($0) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count)
    while bytes.count < count { bytes += period.prefix(count - bytes.count) }
    return bytes
}

extension TCPStream {
    func write(_ text: String) {
        Array(text.utf8).withUnsafeBytes { write($0) }
    }
}

/// Bytes waiting unread in a socket (FIONREAD).
func unreadBytes(_ fd: Int32) -> Int32 {
    var count: Int32 = 0
    XCTAssertEqual(ioctl(fd, UInt(FIONREAD), &count), 0)
    return count
}

/// `peer` sends `text` to `stream`, which reads it (a closing stream: reads and discards).
/// `stream` reads only once the bytes are seen waiting in its socket, so a test does not rely
/// on loopback delivering them within the peer's send.
func sendAndWaitUntilRead(_ text: String, from peer: TCPStream, to stream: TCPStream, on test: LeakCheckedLoop,
                          file: StaticString = #filePath, line: UInt = #line) throws {
    let fd = try XCTUnwrap(stream.socketDescriptor, file: file, line: line)
    stream.stopReading()
    peer.write(text)
    test.run(until: "the peer's bytes arrived", file: file, line: line) { unreadBytes(fd) > 0 }
    stream.startReading()
    test.run(until: "the stream read the peer's bytes", file: file, line: line) { unreadBytes(fd) == 0 }
}
