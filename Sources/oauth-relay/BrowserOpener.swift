#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens a URL in the desktop's browser with `xdg-open`, without waiting for the browser:
/// `/bin/sh` starts `xdg-open` in the background and exits at once, so the only child this
/// process has is reaped here and `xdg-open` (adopted by init) leaves no zombie behind while
/// the login goes on. The URL is passed as an argument, never as part of the shell's text.
enum BrowserOpener {
    static let opener = "/usr/bin/xdg-open"

    static func open(_ url: String) {
        let arguments = ["/bin/sh", "-c", opener + " \"$1\" &", "sh", url]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        guard posix_spawn(&child, "/bin/sh", nil, nil, &argv, environ) == 0 else { return }
        var status: Int32 = 0
        while waitpid(child, &status, 0) == -1 && errno == EINTR {}
    }
}
