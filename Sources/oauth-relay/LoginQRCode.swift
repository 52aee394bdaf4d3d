#if canImport(Glibc)
import Glibc
#endif
import QRCode

/// The QR code `oauth-relay login` draws under a device login's code, so that a phone camera can
/// open the verification URI (with the code in it, when the IdP gives `verification_uri_complete`).
///
/// Drawn only for a person at a terminal: when standard error is a terminal, the log format is
/// text, and `--no-qr` was not given. In a pipe, a file, a JSON log or a test's captured output it
/// would be noise, so there the output stays exactly as it was without it.
struct LoginQRCode {
    /// Columns the terminal has, when it says (nil: unknown, draw anyway).
    let terminalColumns: Int?

    /// Nil when the QR code is not to be drawn.
    static func forStandardError(disabled: Bool, logFormat: LogFormat?) -> LoginQRCode? {
        guard !disabled, isatty(2) != 0, (logFormat ?? .text) == .text else { return nil }
        var size = winsize()
        let columns = ioctl(2, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : nil
        return LoginQRCode(terminalColumns: columns)
    }

    /// What to print after the code and the URI: the symbol of `uri` at error correction level M
    /// (it survives a smudged screen or a glare), or one line saying why there is none. A symbol
    /// wider than the terminal would wrap into something no camera reads, so it is not drawn.
    func text(for uri: String) -> String {
        let symbol: QRCode
        do {
            symbol = try QRCode(encoding: uri, errorCorrection: .medium)
        } catch {
            return "(no QR code: \(error))\n"
        }
        let width = symbol.terminalWidth()
        if let terminalColumns, terminalColumns < width {
            return "(a QR code of this URI needs a terminal \(width) columns wide; this one has \(terminalColumns))\n"
        }
        return "\nOr open it on a phone by scanning this QR code:\n\n" + symbol.terminalText() + "\n"
    }
}
