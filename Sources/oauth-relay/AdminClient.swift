import Config
import EventLoop
import HTTPClient
import JSON

/// One request to a running relay's admin listener, for the commands that drive it (`login`,
/// `logout`): sent on a loop of its own, waited for, and read as JSON.
struct AdminClient {
    let address: HostPort

    struct Answer {
        let status: Int
        /// The answer's JSON object (an empty one when the body is no JSON object).
        let json: JSONValue
    }

    /// How long a call waits for the relay's answer unless told otherwise.
    static let responseTimeoutMilliseconds: UInt64 = 10_000

    /// Nil when nothing listens there (no relay runs with this configuration). `responseTimeoutMilliseconds`:
    /// for a call the relay may take longer to answer (it says how long it waits at most).
    func call(_ method: String, _ target: String, responseTimeoutMilliseconds: UInt64 = Self.responseTimeoutMilliseconds) throws -> Answer? {
        let loop = try EventLoop()
        defer { try? loop.close() }
        var outcome: Result<HTTPClientResponse, HTTPClientError>?
        let request = HTTPClientRequest(method: method, host: address.host, port: address.port, target: target)
        _ = sendHTTPRequest(request, on: loop, limits: HTTPClientLimits(connectTimeoutMilliseconds: 2000, responseTimeoutMilliseconds: responseTimeoutMilliseconds)) {
            outcome = $0
        }
        loop.run()
        switch outcome {
        case .success(let response):
            var json = JSONValue.object([])
            if let parsed = try? JSONValue(parsing: response.body), parsed.members != nil { json = parsed }
            return Answer(status: response.status, json: json)
        case .failure(.connect):
            return nil
        case .failure(let error):
            throw AdminClientError(reason: "the relay's admin listener at \(address) did not answer: \(error)")
        case nil:
            throw AdminClientError(reason: "the relay's admin listener at \(address) did not answer")
        }
    }

    /// The `/identities` entry of `name`.
    func identity(_ name: String) throws -> JSONValue? {
        guard let answer = try call("GET", "/identities") else { return nil }
        let entries = answer.json["identities"]?.array ?? []
        return entries.first { $0["name"]?.string == name }
    }
}

struct AdminClientError: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
