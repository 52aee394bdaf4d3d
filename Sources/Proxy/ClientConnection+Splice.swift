// The request body by splice: the rest of a Content-Length body goes from the client's socket to
// the upstream's inside the kernel when `BodySplice` allows it (EventLoop/SpliceRelay.swift). The
// connection is its client stream's `SpliceAdvisor` from the read that shows such a body until
// the advisor is asked while the body no longer qualifies (its last bytes, which go by read so
// that the parser ends the message; a local answer; an ended exchange).

import EventLoop

extension ClientConnection: SpliceAdvisor {
    /// After a parsed read: when the rest of the request body may be spliced, the client socket's
    /// next readable bytes are offered to `spliceTarget` before any read.
    func offerRequestBodySplice() {
        // Most reads leave no body to come (a GET's whole request): answered from the exchange,
        // before any reference is taken or the stream cast.
        guard exchange.phase == .exchanging, exchange.current.request.upload == .pending,
              let work = workspace, work.parser.lengthFramedBodyRemaining >= BodySplice.minimumRemaining,
              let client = stream as? TCPStream, client.spliceAdvisor == nil, requestBodySplice() != nil else { return }
        client.spliceAdvisor = self
    }

    /// The upstream's socket, when the rest of the request body may be spliced there.
    private func requestBodySplice() -> TCPStream? {
        guard exchange.phase == .exchanging, !parserPaused, let work = workspace, work.leftover.isEmpty else { return nil }
        let remaining = work.parser.lengthFramedBodyRemaining
        guard remaining > 0, let upstreamStream = upstreamLeg?.upstream?.stream else { return nil }
        let sink = upstreamStream as? TCPStream
        let facts = BodySplice.Facts(clientTLS: false, upstreamTLS: sink == nil, remaining: remaining,
                                     relayedAsIs: exchange.forwardsRequestBody, keptForReplay: exchange.keepsRequestBody,
                                     forwardProxy: forwardSide != nil)
        guard BodySplice(facts) == .splice, let sink else { return nil }
        return sink
    }

    func spliceTarget(for stream: TCPStream) -> SpliceTarget? {
        guard let sink = requestBodySplice() else {
            // libuv reads again; the next parsed read may offer a splice anew.
            stream.spliceAdvisor = nil
            return nil
        }
        return SpliceTarget(sink: sink, maxBytes: work.parser.skippableBodyBytes)
    }

    /// Spliced body bytes count as parsed.
    func stream(_ stream: TCPStream, didSplice count: Int) {
        work.parser.skipBody(count)
        requestLeg?.bodySpliced(count)
    }
}
