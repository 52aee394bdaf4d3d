// Fuzz target: reading a token endpoint's answer (status, Content-Type, body).
//
// The first byte chooses the status and content type; the rest is the body. Invariants: the
// answer is a token or a typed error, never a crash; an error's description never shows the
// client secret of the request; a token has a positive lifetime of at most a year.

import Endpoints
import HTTPFields
import OAuth2
import SafeText

private let clientSecret = "fuzz-client-secret-51f0"
private let statuses = [200, 200, 200, 400, 401, 429, 500, 503]
private let tokenURL = HTTPURL(scheme: .https, host: "idp.test", port: 443, path: "/token")
private let request = TokenRequest.grant(for: Identity(name: "fuzz", tokenUrl: tokenURL,
    clientAuth: .basic(id: "fuzz-client", secret: Secret(clientSecret))), at: tokenURL)!

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenResponse(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    let status = statuses[Int(input[0]) % statuses.count]
    let contentType = input[0] & 0x80 == 0 ? "application/json" : "application/x-www-form-urlencoded"
    let reply = TokenEndpointReply(status: status, headers: [HTTPField(name: "Content-Type", value: contentType)],
                                   body: Array(input[1...]))
    do throws(TokenEndpointError) {
        let token = try request.parseResponse(reply, unixTime: 1_700_000_000)
        precondition(token.expiresIn > 0 && token.expiresIn <= 366 * 24 * 3600, "lifetime \(token.expiresIn)")
    } catch {
        precondition(!"\(error)".contains(clientSecret), "an error shows the client secret")
    }
    return 0
}
