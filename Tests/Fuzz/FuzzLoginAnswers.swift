// Fuzz target: what an identity provider sends back during an interactive login — the query of
// the callback, a discovery document, a device authorization answer.
//
// The first byte chooses the reader (and a status); the rest is the input. Invariants: a typed
// result, never a crash; no error shows the client secret the request carried; no error
// quotes more than a few hundred bytes of what the IdP sent, however large.

import Endpoints
import HTTPFields
import OAuth2
import SafeText

private let clientSecret = "fuzz-client-secret-51f0"
private let issuer = "https://idp.test/realms/fuzz"
private let tokenEndpoint = HTTPURL(scheme: .https, host: "idp.test", path: "/token")
private let deviceRequest = TokenRequest.deviceAuthorization(
    for: Identity(name: "fuzz", tokenUrl: tokenEndpoint, grant: .deviceCode(seed: nil),
                  clientAuth: .basic(id: "fuzz-client", secret: Secret(clientSecret))),
    at: HTTPURL(scheme: .https, host: "idp.test", path: "/device"), tokenEndpoint: tokenEndpoint)
private let documentURL = HTTPURL(scheme: .https, host: "idp.test", path: "/realms/fuzz/.well-known/openid-configuration")
private let statuses = [200, 200, 200, 302, 400, 404, 500, 503]
/// What an error may quote: the cleaned excerpts are 200 bytes; with the URLs and the words around them.
private let longestDescription = 1_500

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLoginAnswers(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    let rest = Array(input[1...])
    let reply = TokenEndpointReply(status: statuses[Int(input[0] >> 2) % statuses.count],
                                   headers: [HTTPField(name: "Content-Type", value: "application/json"),
                                             HTTPField(name: "Location", value: "https://idp.test/login?x=1")],
                                   body: rest)
    switch input[0] % 3 {
    case 0:
        do throws(AuthorizationCallbackProblem) {
            _ = try AuthorizationCallback.parse(query: String(decoding: rest, as: UTF8.self), issuer: issuer,
                                                issuerRequired: input[0] & 0x80 != 0)
        } catch {
            precondition(error.description.utf8.count < longestDescription, "a callback problem quotes too much")
        }
    case 1:
        do throws(DiscoveryError) {
            let metadata = try ProviderMetadata.parse(reply, from: documentURL, issuer: issuer, unixTime: 1_700_000_000)
            precondition(metadata.issuer == issuer, "metadata of another issuer was accepted")
            precondition(metadata.tokenEndpoint.scheme == .https || HostSyntax.isLoopback(metadata.tokenEndpoint.host),
                         "a plain http token endpoint on a host that is not loopback was accepted")
        } catch {
            precondition(error.description.utf8.count < longestDescription, "a discovery error quotes too much")
        }
    default:
        do throws(TokenEndpointError) {
            let authorization = try deviceRequest.parseDeviceAuthorization(reply, unixTime: 1_700_000_000)
            precondition(authorization.expiresIn > 0 && authorization.interval > 0, "a device answer without time")
        } catch {
            let text = deviceRequest.describe(error)
            precondition(!text.contains(clientSecret), "an error shows the client secret")
            precondition(text.utf8.count < longestDescription, "a device authorization error quotes too much")
        }
    }
    return 0
}
