/// What a person needs to finish a device login (RFC 8628 §3.3), as a 401 problem and the
/// relay's pages show it: the user code and where to enter it. The device code is not here:
/// it is the relay's secret.
public struct DeviceLoginView: Sendable, Equatable {
    public var userCode: String
    public var verificationUri: String
    public var verificationUriComplete: String?
    /// Whole seconds left before the code expires.
    public var expiresInSeconds: Int

    public init(userCode: String, verificationUri: String, verificationUriComplete: String? = nil, expiresInSeconds: Int) {
        self.userCode = userCode
        self.verificationUri = verificationUri
        self.verificationUriComplete = verificationUriComplete
        self.expiresInSeconds = expiresInSeconds
    }
}
