/// What an upstream connection reports to the pool that keeps it between exchanges (the
/// proxy's `UpstreamPool`): it went idle, an idle one closed, it closed and gave back its slot,
/// or it left the queue for a slot without ever holding one. All calls happen on the loop's
/// thread. A connection without a pool (`sendHTTPRequest`'s) serves one exchange and closes.
public protocol UpstreamConnectionPool: AnyObject {
    /// The exchange ended cleanly and the connection may serve another: keep it, hand it to a
    /// queued exchange (`takeOver`), or close it.
    func park(_ connection: UpstreamConnection)
    /// An idle connection closed.
    func unpark(_ connection: UpstreamConnection)
    /// A connection that held a slot closed.
    func connectionClosed()
    /// A queued connection closed before it got a slot.
    func leaveQueue(_ connection: UpstreamConnection)
}
