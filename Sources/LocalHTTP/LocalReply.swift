// Answers given later: a handler that waits for another thread (the admin's logout waits for the
// shared store's removal on the token thread) returns `LocalAnswer.later` and keeps the
// `LocalReply`; its connection stops reading (requests pipelined behind it wait, in order) while
// the server's loop goes on answering every other connection. `send` may be called from any
// thread: the response is put in the server's mailbox and the loop is woken to write it.
//
// Lifetime: the mailbox's wake-up is made with the first later answer and closed with the server.
// A reply sent after its connection closed, or after the server closed, is dropped; a reply sent
// twice is written once (the first wins), so a handler may race a deadline against its work.
// A deadline (`LocalAnswer.laterWithin`) is a timer on the server's loop that sends its response
// through the same reply: closed once an answer is written, or with the connection or the server
// (a waiting connection does not read, so in practice with the server).

import EventLoop
import Locking

/// How a handler answers: at once, or later through the reply it is handed.
public enum LocalAnswer {
    case now(LocalResponse)
    case later((LocalReply) -> Void)
    /// `later`, with `LocalDeadline.response` sent when the handler has not answered in time.
    case laterWithin(LocalDeadline, (LocalReply) -> Void)
}

/// How long an answer given later may take, and what is sent when it takes longer.
public struct LocalDeadline: Sendable {
    public let milliseconds: UInt64
    public let response: LocalResponse

    public init(milliseconds: UInt64, response: LocalResponse) {
        self.milliseconds = milliseconds
        self.response = response
    }
}

/// One request's answer, to be sent once, from any thread.
public final class LocalReply: Sendable {
    private let mailbox: LocalReplyMailbox
    private let connection: UInt64
    private let sent = Locked(false)

    init(mailbox: LocalReplyMailbox, connection: UInt64) {
        self.mailbox = mailbox
        self.connection = connection
    }

    /// Writes `response` on the request's connection (from the server's loop). Only the first
    /// call counts.
    public func send(_ response: LocalResponse) {
        let first = sent.withLock { sent in
            defer { sent = true }
            return !sent
        }
        if first { mailbox.post(response, to: connection) }
    }
}

/// The responses sent from other threads, waiting for the server's loop.
///
/// `@unchecked Sendable`: `ready` is guarded by its lock, and `wakeup` is a constant whose
/// `wake()` is thread-safe and does nothing once closed (LoopWakeup.swift); it is closed on the
/// loop's thread (`close`).
final class LocalReplyMailbox: @unchecked Sendable {
    private struct Ready: Sendable {
        let connection: UInt64
        let response: LocalResponse
    }

    private let ready: Locked<[Ready]>
    private let wakeup: LoopWakeup

    init(loop: EventLoop, deliver: @escaping (UInt64, LocalResponse) -> Void) {
        let ready = Locked<[Ready]>([])
        self.ready = ready
        wakeup = LoopWakeup(loop: loop) {
            let replies = ready.withLock { ready -> [Ready] in
                let taken = ready
                ready.removeAll()
                return taken
            }
            for reply in replies { deliver(reply.connection, reply.response) }
        }
    }

    func post(_ response: LocalResponse, to connection: UInt64) {
        ready.withLock { $0.append(Ready(connection: connection, response: response)) }
        wakeup.wake()
    }

    /// On the loop's thread: later replies are dropped.
    func close() {
        wakeup.close()
    }
}
