// TLS as a pure engine: OpenSSL over memory buffers, no socket (the Node.js `enc_in`/`enc_out`
// pattern). Whoever owns the transport moves bytes; the engine only transforms them:
//
//     transport read  ──feed──▶ [incoming] ─▶ SSL ─▶ read(into:) ──▶ plaintext for HTTP
//     transport write ◀─takeOutgoing── [outgoing] ◀─ SSL ◀── write(_:) ◀── plaintext from HTTP
//
// Driving it from a libuv stream:
//   - after creating a client engine: send `takeOutgoing` (the ClientHello);
//   - on every read callback: `read(fed: bytes, into: space)` (or `feedEndOfStream()` on EOF,
//     then `read(into: space)`), which decrypts into `space` and hands its plaintext on, then
//     send `takeOutgoing` (handshake records, alerts, key-update answers), then act on the status;
//   - or, with the socket's readiness reported instead of its bytes: `read(from: source, into:
//     space)`, OpenSSL receiving through `source` (a `CiphertextSource`) into its own record
//     buffer; an end or error the source met is its owner's to act on afterwards (an end:
//     `feedEndOfStream()`, then `read(into: space)` as above);
//   - to send: `write(plaintext)`, then send `takeOutgoing`. Plaintext written during the
//     handshake is kept and encrypted as soon as it completes.
//   - to end: `close()` (close_notify), send `takeOutgoing`, shut the socket down.
// OpenSSL's WANT_READ/WANT_WRITE never escape: with memory buffers a write always succeeds
// and "want read" is the status `.handshaking` or `.wantsRead`.
//
// One engine per connection, used by one thread at a time. Steady state allocates nothing:
// `incoming` keeps its storage, the plaintext goes into the caller's space (or a scratch record
// the engine allocates at its first `read(_:)`), and `outgoing` trades storage with the
// caller's buffer.
//
// The engine only: keys, signatures, digests and AES-GCM are the Crypto module's, which the
// engine uses for nothing but OpenSSL's error queue (`OpenSSLErrors`).

import ByteBuffers
internal import COpenSSL
import Crypto

/// Where a connection stands, as returned by every engine call.
public enum TLSStatus: Equatable, Sendable {
    /// The handshake is under way: send `takeOutgoing`, then feed the peer's answer.
    case handshaking
    /// Open, and every complete record fed so far has been read: feed more ciphertext.
    /// (Returned by `read(into:)`; `state` says `.established` instead.)
    case wantsRead
    /// Open: plaintext flows both ways.
    case established
    /// The peer ended the stream with close_notify: a clean end.
    case closed
    /// The connection failed; nothing more goes through it. `takeOutgoing` may still hold an
    /// alert for the peer.
    case failed(TLSError)
}

public final class TLSEngine {
    /// `.handshaking`, `.established`, `.closed` or `.failed`; never `.wantsRead`.
    public private(set) var state: TLSStatus = .handshaking

    private let configuration: TLSConfiguration
    private let ssl: OpaquePointer
    private let buffers = CiphertextBuffers()
    /// The name the certificate is checked against (and the session cache key); nil for servers.
    private let peerName: String?
    /// Plaintext written before the handshake completed.
    private var pendingPlaintext = ByteBuffer()
    /// A session OpenSSL offered before the pin check passed (TLS 1.2): cached once it passes.
    private var pendingSession: CachedSession?
    /// The cached session this connection resumed from, then the last one it cached: the cache
    /// forgets it if the connection fails (see `ClientSessionCache`).
    private var cachedSession: CachedSession?
    private var closeNotifySent = false
    /// OpenSSL reads ahead (set at the first `read(from:into:_:)`).
    private var readsAhead = false
    /// One TLS record of plaintext, for `read(_:)`, whose caller gives no space; allocated at
    /// its first call.
    private var scratch: UnsafeMutableRawBufferPointer?
    /// The most plaintext one record carries (TLS 1.2 and 1.3): the least space `read` takes.
    public static let maxRecordPlaintext = 16384

    /// An engine for a connection to `host` (the URL's host: a name, or an IP literal, with or
    /// without brackets). SNI and the checked name are `configuration.serverName ?? host`;
    /// an IP address is checked as an address and sent without SNI. The ClientHello is ready
    /// in `takeOutgoing` when this returns.
    public convenience init(client configuration: TLSConfiguration, host: String) {
        precondition(configuration.role == .client, "a client engine needs a client configuration")
        var name = configuration.serverName ?? host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        self.init(configuration: configuration, peerName: name)
        SSL_set_connect_state(ssl)
        let parameters = SSL_get0_param(ssl)
        if X509_VERIFY_PARAM_set1_ip_asc(parameters, name) == 1 {
            // An address: checked as one, and never sent as SNI (RFC 6066 allows host names only).
        } else {
            shim_SSL_set_tlsext_host_name(ssl, name)
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            if configuration.verifiesPeer, SSL_set1_host(ssl, name) != 1 {
                _ = fail(.handshakeFailed(reason: "cannot check the name \"\(name)\""))
                return
            }
        }
        OpenSSLErrors.clear()
        if let cached = configuration.sessions.session(for: name), cached.offer(to: ssl) {
            cachedSession = cached
        }
        _ = advanceHandshake()
    }

    /// An engine for a connection accepted by a TLS listener; it waits for the ClientHello.
    public convenience init(server configuration: TLSConfiguration) {
        precondition(configuration.role == .server, "a server engine needs a server configuration")
        self.init(configuration: configuration, peerName: nil)
        SSL_set_accept_state(ssl)
    }

    private init(configuration: TLSConfiguration, peerName: String?) {
        self.configuration = configuration
        self.peerName = peerName
        guard let ssl = SSL_new(configuration.context) else { fatalError("SSL_new: out of memory") }
        self.ssl = ssl
        // One BIO for both directions; SSL_set_bio takes over its single reference (and takes
        // a second one itself, for the second direction).
        let bio = CiphertextBuffers.makeBIO(over: buffers)
        SSL_set_bio(ssl, bio, bio)
        // Unretained: OpenSSL calls back only from inside this engine's own calls on `ssl`.
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        // Whatever OpenSSL does to this connection's session as it frees it, it does to a copy
        // of the cached one: a healthy connection dropped without `close()` (an idle pooled
        // connection) leaves the cache as it was, and a failed one has made it forget its
        // session already (`fail`).
        SSL_free(ssl)
        scratch?.deallocate()
    }

    /// Engines whose OpenSSL state (SSL, BIO, buffers) is not yet freed, in this process: for
    /// tests that check nothing leaks.
    public static var liveEngines: Int { CiphertextBuffers.live.load(ordering: .relaxed) }

    // MARK: - Transport side

    /// Ciphertext read from the transport. Nothing is decrypted until `read(into:)`; once the
    /// connection is closed or failed, it is dropped.
    public func feed(_ ciphertext: UnsafeRawBufferPointer) {
        switch state {
        case .handshaking, .established: buffers.feed(ciphertext)
        default: break
        }
    }

    public func feed(_ ciphertext: [UInt8]) {
        ciphertext.withUnsafeBytes { feed($0) }
    }

    /// The transport reached end of file. The next `read(into:)` reports `.closed` if the peer
    /// had sent close_notify (or this side had, with `close()`), and `.failed(.truncated)`
    /// otherwise: a stream cut short is an error, not an end.
    public func feedEndOfStream() {
        buffers.incomingEnded = true
    }

    /// Moves the ciphertext waiting to be sent to the end of `destination`; returns its length.
    /// When `destination` is empty the storage is swapped, not copied: `destination` must not be
    /// a buffer the transport is still writing from.
    @discardableResult
    public func takeOutgoing(into destination: inout ByteBuffer) -> Int {
        let count = buffers.outgoing.count
        if destination.isEmpty {
            destination.swapStorage(with: &buffers.outgoing)
        } else {
            destination.append(buffers.outgoing.readableBytes)
        }
        buffers.outgoing.clear()
        return count
    }

    public var hasOutgoing: Bool { !buffers.outgoing.isEmpty }

    /// Bytes of storage held for ciphertext fed and not yet read (none when whole records were
    /// lent to `read(fed:into:_:)`).
    public var heldCiphertextCapacity: Int { buffers.incoming.capacity }

    // MARK: - Application side

    /// Decrypts everything fed so far (driving the handshake first if needed) and appends the
    /// plaintext to `plaintext`. Returns `.wantsRead` when open and drained, `.handshaking`,
    /// `.closed` (close_notify) or `.failed`.
    public func read(into plaintext: inout ByteBuffer) -> TLSStatus {
        read { plaintext.append($0) }
    }

    /// As `read(into:)`, handing each decrypted record to `deliver` instead (for a parser that
    /// consumes in place); the bytes are valid only during the call. `deliver` may `write` and
    /// `close`, but must not drop the last reference to the engine.
    public func read(_ deliver: (UnsafeRawBufferPointer) -> Void) -> TLSStatus {
        let space = scratch ?? UnsafeMutableRawBufferPointer.allocate(byteCount: TLSEngine.maxRecordPlaintext, alignment: 16)
        scratch = space
        return read(into: space, deliver)
    }

    /// As `feed(ciphertext)` then `read(into: space, deliver)`, without copying `ciphertext`
    /// first: OpenSSL reads it where it lies, and what it leaves unread (the start of a record)
    /// is copied and kept for the next read. `ciphertext` is not used once this returns.
    public func read(fed ciphertext: UnsafeRawBufferPointer, into space: UnsafeMutableRawBufferPointer,
                     _ deliver: (UnsafeRawBufferPointer) -> Void) -> TLSStatus {
        switch state {
        case .handshaking, .established: buffers.lend(ciphertext)
        default: return state
        }
        defer { buffers.keepUnreadLent() }
        return read(into: space, deliver)
    }

    /// As `read(into: space, deliver)`, with OpenSSL receiving the ciphertext from `source`
    /// itself once what was fed is drained: the transport's bytes land in OpenSSL's record
    /// buffer, not first in the caller's (one copy fewer per byte). Records are decrypted and
    /// handed on until the source has nothing more (a receive it could not fill). With
    /// read-ahead, OpenSSL asks for as much as its record buffer holds (about one record and
    /// a bit), not a header then a body: one receive per record rather than two.
    /// The source is not used once this returns.
    public func read(from source: any CiphertextSource, into space: UnsafeMutableRawBufferPointer,
                     _ deliver: (UnsafeRawBufferPointer) -> Void) -> TLSStatus {
        switch state {
        case .handshaking, .established: break
        default: return state
        }
        if !readsAhead {
            readsAhead = true
            // OpenSSL's default record buffer, about one record: a bigger one (70,000 bytes, set
            // with SSL_set_default_read_buffer_len) took 2.5 times fewer receives for a 1 GiB
            // download from a TLS upstream but no less CPU (0.70 s/GiB against 0.69,
            // bench/bulk-bodies.sh, 7 rounds, 2026-11-28): before each record, OpenSSL 3.0 moves
            // what is left in its buffer to the front (memmove's samples 1.8 times as many).
            SSL_set_read_ahead(ssl, 1)
        }
        buffers.source = source
        buffers.sourceMayHaveMore = true
        defer {
            buffers.source = nil
            buffers.sourceMayHaveMore = false
        }
        return read(into: space, deliver)
    }

    /// Decrypts everything fed so far (driving the handshake first if needed) into `space` (at
    /// least `maxRecordPlaintext` bytes), and hands the plaintext to `deliver` as it fills: when
    /// another record might not fit, and at the end. One call for the records of one transport
    /// read, as plain TCP would give them, rather than one per record: the consumer writes them
    /// onward in one system call. The bytes are valid only during the call. `deliver` may
    /// `write` and `close`, but must not drop the last reference to the engine. Returns
    /// `.wantsRead` when open and drained, `.handshaking`, `.closed` (close_notify) or `.failed`.
    public func read(into space: UnsafeMutableRawBufferPointer, _ deliver: (UnsafeRawBufferPointer) -> Void) -> TLSStatus {
        precondition(space.count >= TLSEngine.maxRecordPlaintext, "less space than a record")
        if case .handshaking = state {
            guard case .established = advanceHandshake() else { return state }
        }
        guard case .established = state else { return state }
        let base = space.baseAddress!
        var filled = 0
        OpenSSLErrors.clear()
        while true {
            var count = 0
            if SSL_read_ex(ssl, base + filled, space.count - filled, &count) == 1 {
                filled += count
                // Nothing fed is left, in `incoming`, the source or inside OpenSSL: another
                // SSL_read_ex could only say WANT_READ. Skipping it (and its SSL_get_error) saves
                // about 800 instructions per response (callgrind, keep-alive requests to an https
                // upstream: TLS costs the relay about 16,700 instructions per request, 14,100 of
                // them OpenSSL's SSL_write_ex and SSL_read_ex).
                if buffers.incomingAvailable == 0, !buffers.incomingEnded, !buffers.sourceMayHaveMore, SSL_has_pending(ssl) == 0 {
                    deliver(UnsafeRawBufferPointer(start: base, count: filled))
                    return .wantsRead
                }
                if space.count - filled >= TLSEngine.maxRecordPlaintext { continue }
                deliver(UnsafeRawBufferPointer(start: base, count: filled))
                filled = 0
                // `deliver` may have written (SSL_write_ex runs without a clear first, see
                // `encrypt`): the next SSL_get_error must see only this read's errors.
                OpenSSLErrors.clear()
                continue
            }
            // What ended the reading is read off OpenSSL before the plaintext before it is handed
            // on (`deliver` may write, and add to the error queue), and takes effect after: the
            // consumer sees the connection still open, as it was when those records came.
            let ending = readEnding()
            if filled > 0 {
                deliver(UnsafeRawBufferPointer(start: base, count: filled))
                // A write `deliver` made may have failed the connection.
                guard case .established = state else { return state }
            }
            switch ending {
            case .drained:
                return .wantsRead
            case .closeNotify:
                state = .closed
                return state
            case .failure(let error):
                return fail(error)
            }
        }
    }

    /// Why SSL_read_ex returned no plaintext.
    private enum ReadEnding {
        /// Every complete record fed has been read.
        case drained
        case closeNotify
        /// `fail`'s argument: nil for an end of stream after this side's own close_notify.
        case failure(TLSError?)
    }

    private func readEnding() -> ReadEnding {
        switch SSL_get_error(ssl, 0) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .drained
        case SSL_ERROR_ZERO_RETURN:
            return .closeNotify
        default:
            if buffers.incomingEnded && buffers.incomingAvailable == 0 {
                OpenSSLErrors.clear()
                return .failure(closeNotifySent ? nil : .truncated)
            }
            return .failure(.protocolError(reason: OpenSSLErrors.takeReason(fallback: "the connection failed")))
        }
    }

    /// Encrypts `plaintext` into the outgoing ciphertext (`.established`), or keeps it until the
    /// handshake completes (`.handshaking`). After `close()`, or once closed or failed, nothing
    /// is written and the state is returned.
    @discardableResult
    public func write(_ plaintext: UnsafeRawBufferPointer) -> TLSStatus {
        guard !closeNotifySent else { return state == .established ? .closed : state }
        switch state {
        case .handshaking:
            pendingPlaintext.append(plaintext)
            return state
        case .established:
            return encrypt(plaintext)
        default:
            return state
        }
    }

    @discardableResult
    public func write(_ plaintext: [UInt8]) -> TLSStatus {
        plaintext.withUnsafeBytes { write($0) }
    }

    /// Sends close_notify (into `takeOutgoing`); later writes are refused. Reading goes on, so
    /// the peer's own close_notify is still seen as `.closed`. Also the answer to the peer's
    /// close_notify once `.closed`.
    public func close() {
        guard !closeNotifySent else { return }
        closeNotifySent = true
        switch state {
        case .established, .closed: break
        default: return
        }
        OpenSSLErrors.clear()
        _ = SSL_shutdown(ssl)
        OpenSSLErrors.clear()
    }

    // MARK: - What was negotiated

    /// The ALPN protocol both sides agreed on (`http/1.1`), or nil.
    public var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// True when the handshake resumed a cached session.
    public var sessionReused: Bool { SSL_session_reused(ssl) == 1 }

    /// `TLSv1.3` or `TLSv1.2`.
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// The peer certificate's subject in RFC 2253 form (`CN=relay-client,O=...`), or nil when
    /// the peer sent none (a server seeing a client without a certificate).
    public var peerCertificateSubject: String? {
        guard let certificate = SSL_get0_peer_certificate(ssl), let name = X509_get_subject_name(certificate),
              let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, shim_XN_FLAG_RFC2253()) >= 0 else { return nil }
        var text: UnsafeMutablePointer<CChar>?
        let length = shim_BIO_get_mem_data(bio, &text)
        guard let text, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
    }

    // MARK: - Internals

    private func advanceHandshake() -> TLSStatus {
        OpenSSLErrors.clear()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return handshakeCompleted() }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .handshaking
        default:
            return fail(handshakeError())
        }
    }

    private func handshakeCompleted() -> TLSStatus {
        if configuration.role == .client, !configuration.pins.isEmpty, !sessionReused,
           !configuration.pins.matchChain(of: ssl, verified: configuration.verifiesPeer) {
            return fail(.pinMismatch)
        }
        state = .established
        if let session = pendingSession, let peerName {
            configuration.sessions.store(session, for: peerName)
            cachedSession = session
        }
        pendingSession = nil
        if !pendingPlaintext.isEmpty {
            let status = encrypt(pendingPlaintext.readableBytes)
            pendingPlaintext.clear()
            pendingPlaintext.shrink(ifLargerThan: 0)
            return status
        }
        return state
    }

    /// Why the handshake failed: the certificate verification result when verification is what
    /// failed, otherwise OpenSSL's reason.
    private func handshakeError() -> TLSError {
        let verifyResult = SSL_get_verify_result(ssl)
        if configuration.verifiesPeer, verifyResult != Int(X509_V_OK) {
            OpenSSLErrors.clear()
            return TLSError(verifyResult: verifyResult, expectedName: peerName)
        }
        if buffers.incomingEnded && buffers.incomingAvailable == 0 {
            OpenSSLErrors.clear()
            return .handshakeFailed(reason: "the peer closed the connection during the handshake")
        }
        return .handshakeFailed(reason: OpenSSLErrors.takeReason(fallback: "the connection failed"))
    }

    private func encrypt(_ plaintext: UnsafeRawBufferPointer) -> TLSStatus {
        guard plaintext.count > 0 else { return state }
        // No ERR_clear_error first (about 1,000 instructions per request, measured as above):
        // nothing here asks SSL_get_error what a failure was, and with memory buffers a write
        // fails only on a broken connection, whose reason is then the queue's first.
        var written = 0
        guard SSL_write_ex(ssl, plaintext.baseAddress, plaintext.count, &written) == 1 else {
            return fail(.protocolError(reason: OpenSSLErrors.takeReason(fallback: "cannot write")))
        }
        return state
    }

    /// Enters `.failed(error)`, or `.closed` when `error` is nil (an end this side asked for).
    private func fail(_ error: TLSError?) -> TLSStatus {
        state = error.map { .failed($0) } ?? .closed
        pendingPlaintext.clear()
        pendingSession = nil
        // A connection cut short (maybe by an attacker) or refused leaves no session to resume,
        // as OpenSSL itself would have it.
        if error != nil, let peerName, let session = cachedSession {
            configuration.sessions.forget(session, for: peerName)
        }
        cachedSession = nil
        return state
    }

    /// OpenSSL offers a new session (see `ClientSessionCache`): cache it now if this
    /// connection is established (its pins passed), else hold it until they do.
    fileprivate func sessionArrived(_ session: CachedSession) {
        guard let peerName else { return }
        if case .established = state {
            configuration.sessions.store(session, for: peerName)
            cachedSession = session
        } else if case .handshaking = state {
            pendingSession = session
        }
    }
}

/// The client contexts' new-session callback. The cache keeps a copy (see `ClientSessionCache`);
/// returning 0 lets OpenSSL free the reference it passed.
func sessionArrived(ssl: OpaquePointer?, session: OpaquePointer?) -> Int32 {
    guard let ssl, let session, SSL_SESSION_is_resumable(session) == 1,
          let engine = SSL_get_ex_data(ssl, 0), let copy = CachedSession(copying: session) else { return 0 }
    Unmanaged<TLSEngine>.fromOpaque(engine).takeUnretainedValue().sessionArrived(copy)
    return 0
}
