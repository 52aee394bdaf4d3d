/// Why the relay refused a request for what a browser could have been made to send, as
/// `oauth_relay_refused_requests_total{reason}` counts it: on the data listeners
/// (`RequestPlacement`, in Proxy) and on the admin listener (`AdminGate`, in AdminAPI).
public enum BrowserRefusal: String, Sendable {
    /// A Host the listener does not serve (`ListenerHosts`: DNS rebinding).
    case host
    /// A request a browser marks as another site's (`BrowserPolicy`).
    case crossSite = "cross-site"
}
