import Config
import Endpoints
import FileTestSupport
import Foundation
import OAuth2
import SafeText
import XCTest

/// Decodes `json` with the given environment and base directory.
func decodeConfig(_ json: String, environment: [String: String] = [:], baseDirectory: String = "/nonexistent") throws(ConfigErrors) -> RelayConfig {
    try ConfigLoader.decode(json: Data(json.utf8), baseDirectory: baseDirectory, environment: environment)
}

/// The errors decoding `json` reports; fails the test when it decodes.
func configErrors(_ json: String, environment: [String: String] = [:], baseDirectory: String = "/nonexistent",
                  file: StaticString = #filePath, line: UInt = #line) -> [ConfigError] {
    do {
        let config = try decodeConfig(json, environment: environment, baseDirectory: baseDirectory)
        XCTFail("expected errors, decoded \(config)", file: file, line: line)
        return []
    } catch {
        return error.errors
    }
}

/// `json` decoded in a fresh directory holding `files` (name: contents), which its relative
/// paths name: the config, or the errors decoding it reports.
func decodeConfig(_ json: String, besideFiles files: [String: String]) throws -> Result<RelayConfig, ConfigErrors> {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    for (name, contents) in files {
        try directory.write(name, contents)
    }
    do throws(ConfigErrors) {
        return .success(try decodeConfig(json, baseDirectory: directory.path))
    } catch {
        return .failure(error)
    }
}

/// `path: message` of each error decoding `json` beside `files` reports; none when it decodes.
func configErrors(_ json: String, besideFiles files: [String: String]) throws -> [String] {
    guard case .failure(let errors) = try decodeConfig(json, besideFiles: files) else { return [] }
    return describe(errors.errors)
}

/// `path: message` of each error, for compact assertions.
func describe(_ errors: [ConfigError]) -> [String] {
    errors.map { "\($0.path): \($0.message)" }
}

/// A route list with one route to a local upstream plus `extra` keys, for tests about routes.
func routeJSON(_ extra: String) -> String {
    #"{ "routes": [ { "upstream": "http://127.0.0.1:9001"\#(extra.isEmpty ? "" : ", " + extra) } ] }"#
}

extension ClientAuth {
    /// The client secret, for assertions on what a config decoded to.
    var secret: Secret? {
        switch self {
        case .basic(_, let secret), .post(_, let secret), .clientSecretJWT(_, let secret): secret
        case .publicClient, .unidentified, .privateKeyJWT, .clientAssertion: nil
        }
    }
}

/// One identity `x` decoded from the body of its JSON object (shared by the identity and grant tests).
extension XCTestCase {
    /// A config with one identity `x`, its token URL and `body`.
    func identityJSON(_ body: String) -> String {
        #"{ "identities": { "x": { "tokenUrl": "https://idp/token", \#(body) } } }"#
    }

    func identity(_ body: String) throws -> Identity {
        try XCTUnwrap(decodeConfig(identityJSON(body)).identities["x"])
    }

    /// Identity `x` with `body`, decoded next to a file `name` holding `contents`.
    func identity(_ body: String, withFile name: String, holding contents: String) throws -> Identity {
        try XCTUnwrap(decodeConfig(identityJSON(body), besideFiles: [name: contents]).get().identities["x"])
    }

    func identityErrors(_ body: String) -> [String] {
        describe(configErrors(identityJSON(body)))
    }
}
