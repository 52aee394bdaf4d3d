internal import CLibUV

/// A libuv error code with its symbolic name, e.g. `ECONNREFUSED`.
public struct UVError: Error, Equatable, CustomStringConvertible, Sendable {
    public let code: Int32

    init(_ code: Int32) { self.code = code }

    public var name: String { String(cString: uv_err_name(code)) }
    public var message: String { String(cString: uv_strerror(code)) }
    public var description: String { "\(name): \(message)" }

    public var isConnectionRefused: Bool { code == UV_ECONNREFUSED.rawValue }

    /// EPROTO: what a TLS stream reports for a TLS failure (its own reason says more).
    public static let protocolError = UVError(UV_EPROTO.rawValue)
}

@inline(__always)
func check(_ rc: Int32) throws(UVError) {
    if rc < 0 { throw UVError(rc) }
}
