@testable import EventLoop
import LoopTestSupport
import XCTest

/// Splices what an advisor allows from one stream to another and counts it.
private final class BudgetAdvisor: SpliceAdvisor {
    let sink: TCPStream
    var budget: Int
    var spliced = 0

    init(sink: TCPStream, budget: Int) {
        self.sink = sink
        self.budget = budget
    }

    func spliceTarget(for stream: TCPStream) -> SpliceTarget? {
        guard budget > 0 else {
            stream.spliceAdvisor = nil
            return nil
        }
        return SpliceTarget(sink: sink, maxBytes: budget)
    }

    func stream(_ stream: TCPStream, didSplice count: Int) {
        spliced += count
        budget -= count
    }
}

/// Two loopback connections on one loop: bytes a client sends to the first server go on from
/// that server's stream to the second connection's client, whose server receives them.
final class SpliceRelayTests: XCTestCase {
    private struct Relay {
        let test: LeakCheckedLoop
        let listeners: [TCPListener]
        let sender: TCPStream
        let source: TCPStream
        let sourceEvents: StreamRecorder
        let sink: TCPStream
        let receiver: TCPStream
        let receiverEvents: StreamRecorder
        let senderEvents: StreamRecorder
        let sinkEvents: StreamRecorder

        func close() {
            for stream in [sender, source, sink, receiver] { stream.close() }
            for listener in listeners { listener.close() }
            test.run(until: "every stream closed") {
                [senderEvents, sourceEvents, sinkEvents, receiverEvents].allSatisfy(\.isClosed)
            }
            test.closeAndCheckForLeaks()
        }
    }

    private func connect(_ test: LeakCheckedLoop) throws -> (TCPListener, TCPStream, StreamRecorder, TCPStream, StreamRecorder) {
        let server = try LoopbackServer(on: test.loop)
        let events = StreamRecorder()
        let client = try TCPStream.connect(on: test.loop, to: server.address, delegate: events)
        test.run(until: "connected and accepted") { events.connectResult != nil && !server.accepted.isEmpty }
        let (accepted, acceptedEvents) = try XCTUnwrap(server.accepted.first)
        return (server.listener, client, events, accepted, acceptedEvents)
    }

    private func relay() throws -> Relay {
        let test = try LeakCheckedLoop()
        let (first, sender, senderEvents, source, sourceEvents) = try connect(test)
        let (second, sink, sinkEvents, receiver, receiverEvents) = try connect(test)
        return Relay(test: test, listeners: [first, second], sender: sender, source: source, sourceEvents: sourceEvents,
                     sink: sink, receiver: receiver, receiverEvents: receiverEvents, senderEvents: senderEvents, sinkEvents: sinkEvents)
    }

    func testTheAllowedBytesGoBySpliceInOrderAndTheRestIsReadAsUsual() throws {
        let relay = try relay()
        let payload = patternBytes(4 << 20)
        let kept = 1000
        let advisor = BudgetAdvisor(sink: relay.sink, budget: payload.count - kept)
        relay.source.spliceAdvisor = advisor
        payload.withUnsafeBytes { relay.sender.write($0) }
        relay.test.run(until: "everything arrived") {
            relay.receiverEvents.received.count == payload.count - kept && relay.sourceEvents.received.count == kept
        }
        XCTAssertEqual(advisor.spliced, payload.count - kept)
        XCTAssertTrue(relay.receiverEvents.received(Array(payload.prefix(payload.count - kept))), "spliced whole and in order")
        XCTAssertTrue(relay.sourceEvents.received(Array(payload.suffix(kept))), "past the budget: read and delivered")
        XCTAssertNil(relay.source.spliceAdvisor, "the advisor let go")
        relay.close()
    }

    /// A stream closing unless its peer sends, whose advisor would still splice: what the peer
    /// sends after all is read and discarded, not spliced, so the stream lingers.
    func testAClosingStreamReadsWhatArrivesInsteadOfSplicingIt() throws {
        let relay = try relay()
        let advisor = BudgetAdvisor(sink: relay.sink, budget: 1 << 30)
        relay.source.spliceAdvisor = advisor
        let payload = patternBytes(8 << 20)
        payload.withUnsafeBytes { relay.source.write($0) }
        relay.source.closeAfterWritesUnlessPeerSends()
        XCTAssertGreaterThan(relay.source.queuedBytes, 0)
        try sendAndWaitUntilRead("more", from: relay.sender, to: relay.source, on: relay.test)
        XCTAssertEqual(advisor.spliced, 0, "a closing stream spliced")

        relay.sender.startReading()
        relay.test.run(until: "the sender read to the end", seconds: 30) { relay.senderEvents.endResult != nil }
        XCTAssertTrue(relay.senderEvents.received(payload))
        XCTAssertFalse(relay.source.isClosed, "closed at once although the peer sent more")
        relay.close()
    }

    func testThePeersFINDuringASpliceEndsTheStreamAsARead() throws {
        let relay = try relay()
        let advisor = BudgetAdvisor(sink: relay.sink, budget: 1 << 30)
        relay.source.spliceAdvisor = advisor
        let payload = patternBytes(100_000)
        payload.withUnsafeBytes { relay.sender.write($0) }
        relay.sender.closeAfterWrites()
        relay.test.run(until: "the source ended") { relay.sourceEvents.endResult != nil }
        XCTAssertEqual(relay.sourceEvents.endResult, .some(nil), "the FIN, no error")
        relay.test.run(until: "the bytes arrived") { relay.receiverEvents.received.count == payload.count }
        XCTAssertTrue(relay.receiverEvents.received(payload))
        XCTAssertEqual(relay.sourceEvents.received.count, 0, "nothing went through user space")
        relay.close()
    }
}
