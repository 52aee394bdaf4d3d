// BodySplice: whether a body's bytes may move from one socket to the other inside the kernel
// (splice(2), EventLoop/SpliceRelay.swift) rather than through the relay's read buffer. Only
// when nothing in user space needs them: both sockets plain TCP (TLS encrypts or decrypts every
// byte), a body framed by Content-Length and relayed as it is (no chunk framing written anew, no
// refused or locally answered response whose bytes are dropped, no response head still held
// back), no copy kept for a replay, and enough of it left to be worth the system calls. The
// bytes' counts are kept from splice's results, and the body's last bytes always come through
// the parser, which ends the message with its usual callbacks (and never reads past it).
//
// The decision is a value computed from the exchange's facts, with no socket: BodySpliceTests.

/// Splice the rest of a body, or why not.
enum BodySplice: Equatable {
    case splice
    case refused(Refusal)

    enum Refusal: Equatable {
        /// The client's side is TLS.
        case clientTLS
        /// The upstream's side is TLS.
        case upstreamTLS
        /// Not framed by Content-Length (chunked, close-delimited, none), or the parser is not
        /// inside the body.
        case notLengthFramed
        /// The bytes go out changed (inside chunks of the relay's own) or not at all.
        case notRelayedAsIs
        /// The response head is held back with the bytes of its read (`HeldResponse`).
        case headHeld
        /// A copy of the request body is kept for a replay after an upstream's refusal.
        case keptForReplay
        /// A request to the forward proxy: its bytes stay on the path the forward proxy checks.
        case forwardProxy
        /// Less than `minimumRemaining` of the body is left.
        case small
    }

    /// Below this, the bytes go by read and write: splicing them would save little.
    static let minimumRemaining: UInt64 = 64 * 1024

    struct Facts: Equatable {
        var clientTLS = false
        var upstreamTLS = false
        /// What the parser still expects of a body framed by Content-Length (0: none such).
        var remaining: UInt64 = 0
        /// The exchange relays the bytes unchanged.
        var relayedAsIs = true
        var headHeld = false
        var keptForReplay = false
        var forwardProxy = false
    }

    init(_ facts: Facts) {
        if facts.clientTLS { self = .refused(.clientTLS); return }
        if facts.upstreamTLS { self = .refused(.upstreamTLS); return }
        if facts.remaining == 0 { self = .refused(.notLengthFramed); return }
        if !facts.relayedAsIs { self = .refused(.notRelayedAsIs); return }
        if facts.headHeld { self = .refused(.headHeld); return }
        if facts.keptForReplay { self = .refused(.keptForReplay); return }
        if facts.forwardProxy { self = .refused(.forwardProxy); return }
        if facts.remaining < Self.minimumRemaining { self = .refused(.small); return }
        self = .splice
    }
}
