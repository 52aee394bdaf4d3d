// The llhttp settings every HTTP1Parser hands `llhttp_init`: the table of C callbacks, each a
// non-capturing closure that recovers its parser and calls `ParserCallbacks`. None for the
// pieces of a head (target, status, names, values): a complete head is read in one pass.

internal import CLLHTTP

/// Runs `body` on the parser that owns `state`. `_withUnsafeGuaranteedRef` skips the
/// retain/release pair of `takeUnretainedValue()`: the parser is alive for the whole
/// `llhttp_execute` call that invokes these callbacks.
@inline(__always)
private func withParser(_ state: UnsafeMutablePointer<llhttp_t>?, _ body: (HTTP1Parser) -> Int32) -> Int32 {
    Unmanaged<HTTP1Parser>.fromOpaque(state!.pointee.data)._withUnsafeGuaranteedRef(body)
}

/// The settings every parser hands `llhttp_init`, at an address that never changes: llhttp keeps
/// the pointer for the parser's life, so it cannot be `&` of a Swift variable (valid only for
/// the call). Allocated once, filled once, never freed (one per process, like OpenSSL's BIO
/// method in CiphertextBuffers), and only read afterwards — by llhttp.
struct ParserSettings: @unchecked Sendable {
    // @unchecked: the pointee is written once, inside the initializer of `shared` (which Swift
    // runs exactly once, thread-safely, before any reader has the pointer), and only read after.
    let pointer: UnsafePointer<llhttp_settings_t>

    static let shared: ParserSettings = {
        let settings = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        settings.initialize(to: llhttp_settings_t())
        llhttp_settings_init(settings)
        settings.pointee.on_message_begin = { withParser($0) { ParserCallbacks.messageBegin($0) } }
        settings.pointee.on_headers_complete = { withParser($0) { ParserCallbacks.headersComplete($0) } }
        settings.pointee.on_body = { state, at, length in withParser(state) { ParserCallbacks.body($0, at, length) } }
        settings.pointee.on_chunk_header = { withParser($0) { ParserCallbacks.chunkHeader($0) } }
        settings.pointee.on_chunk_extension_name = { state, _, length in withParser(state) { ParserCallbacks.chunkExtension($0, length) } }
        settings.pointee.on_chunk_extension_value = { state, _, length in withParser(state) { ParserCallbacks.chunkExtension($0, length) } }
        settings.pointee.on_chunk_complete = { withParser($0) { ParserCallbacks.chunkComplete($0) } }
        settings.pointee.on_message_complete = { withParser($0) { ParserCallbacks.messageComplete($0) } }
        return ParserSettings(pointer: UnsafePointer(settings))
    }()
}
