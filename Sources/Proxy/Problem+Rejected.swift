import HTTP1

extension Problem {
    /// The answer to a request the parser rejected, by the status its error calls for
    /// (431, 501, 505, or 400 for the rest).
    static func rejected(_ error: HTTP1Error) -> Problem {
        switch error.requestStatus {
        case 431: return .headersTooLarge(error.reason)
        case 501: return .notImplemented(error.reason)
        case 505: return .versionNotSupported(error.reason)
        default: return .badRequest(error.reason)
        }
    }
}
