import Config
import OAuth2
import XCTest

/// What providers need beyond the standard, as configuration: extra parameters of a login's
/// authorization request (`authorizationParams`), token response members in nested objects and
/// token types under the IdP's own names (`responseFields`).
final class ProviderQuirksConfigTests: XCTestCase {
    private let browser = #""grant": "authorization_code", "clientId": "cli", "authorizationUrl": "https://idp/authorize""#

    // MARK: - authorizationParams

    func testAuthorizationParamsAreDecoded() throws {
        let identity = try identity(browser + #", "authorizationParams": { "access_type": "offline", "prompt": "consent", "hd": "", "#
                                    + #""response_mode": "query" }"#)
        XCTAssertEqual(identity.authorizationParams, ["access_type": "offline", "prompt": "consent", "hd": "", "response_mode": "query"])
    }

    func testAuthorizationParamsResolveEnvironmentReferences() throws {
        let json = identityJSON(browser + #", "authorizationParams": { "audience": "${API_AUDIENCE}" }"#)
        let config = try decodeConfig(json, environment: ["API_AUDIENCE": "https://api.example.com"])
        XCTAssertEqual(config.identities["x"]?.authorizationParams, ["audience": "https://api.example.com"])
    }

    func testAudienceAndResourceMayBeAuthorizationParamsWhenTheirKeysAreUnset() throws {
        let identity = try identity(browser + #", "authorizationParams": { "audience": "https://api", "resource": "https://r/" }"#)
        XCTAssertEqual(identity.authorizationParams, ["audience": "https://api", "resource": "https://r/"])
        XCTAssertNil(identity.audience, "an authorization parameter is not sent to the token endpoint")
    }

    /// The refusal table: each bad `authorizationParams` -> the exact error at its JSON path.
    func testAuthorizationParamsRefusals() {
        let relaysOwn = "is the relay's to set for each login: response_type is always code, and state, nonce, "
            + "code_challenge and code_challenge_method tie the code to the login that asked for it"
        let requestObject = "would replace the relay's authorization request (RFC 9101: the IdP reads the parameters from the "
            + "request object, not the query), and with them its state, PKCE challenge and redirect_uri"
        let cases: [(String, [String])] = [
            (browser + #", "authorizationParams": { "response_type": "token" }"#,
             ["$.identities.x.authorizationParams.response_type: response_type " + relaysOwn]),
            (browser + #", "authorizationParams": { "state": "s" }"#, ["$.identities.x.authorizationParams.state: state " + relaysOwn]),
            (browser + #", "authorizationParams": { "nonce": "n" }"#, ["$.identities.x.authorizationParams.nonce: nonce " + relaysOwn]),
            (browser + #", "authorizationParams": { "code_challenge": "c" }"#,
             ["$.identities.x.authorizationParams.code_challenge: code_challenge " + relaysOwn]),
            (browser + #", "authorizationParams": { "code_challenge_method": "plain" }"#,
             ["$.identities.x.authorizationParams.code_challenge_method: code_challenge_method " + relaysOwn]),
            (browser + #", "authorizationParams": { "client_id": "other" }"#,
             [#"$.identities.x.authorizationParams.client_id: client_id is set from "clientId"; set it there"#]),
            (browser + #", "authorizationParams": { "redirect_uri": "http://127.0.0.1:8180/cb" }"#,
             [#"$.identities.x.authorizationParams.redirect_uri: redirect_uri is set from "redirectUri"; set it there"#]),
            (browser + #", "authorizationParams": { "scope": "openid" }"#,
             [#"$.identities.x.authorizationParams.scope: scope is set from "scope"; set it there"#]),
            (browser + #", "audience": "api", "authorizationParams": { "audience": "other" }"#,
             [#"$.identities.x.authorizationParams.audience: audience is already sent from "audience"; set it in one place"#]),
            (browser + #", "resource": "https://r/", "authorizationParams": { "resource": "https://s/" }"#,
             [#"$.identities.x.authorizationParams.resource: resource is already sent from "resource"; set it in one place"#]),
            (browser + #", "authorizationParams": { "request": "eyJ.x.y" }"#,
             ["$.identities.x.authorizationParams.request: request " + requestObject]),
            (browser + #", "authorizationParams": { "request_uri": "urn:ietf:params:oauth:request_uri:x" }"#,
             ["$.identities.x.authorizationParams.request_uri: request_uri " + requestObject]),
            (browser + #", "authorizationParams": { "response_mode": "form_post" }"#,
             [#"$.identities.x.authorizationParams.response_mode: the relay's callback reads the code from the query: "#
                + #"response_mode can only be query, got "form_post""#]),
            (browser + #", "authorizationParams": { "response_mode": "fragment" }"#,
             [#"$.identities.x.authorizationParams.response_mode: the relay's callback reads the code from the query: "#
                + #"response_mode can only be query, got "fragment""#]),
            (browser + #", "authorizationParams": { "": "x" }"#,
             [#"$.identities.x.authorizationParams[""]: a query parameter name must not be empty"#]),
            (browser + #", "authorizationParams": { "access_type": true }"#,
             ["$.identities.x.authorizationParams.access_type: expected a string, got boolean"]),
            (browser + #", "authorizationParams": { "max_age": 300 }"#,
             ["$.identities.x.authorizationParams.max_age: expected a string, got number"]),
            (browser + #", "authorizationParams": "access_type=offline""#,
             ["$.identities.x.authorizationParams: expected an object, got string"]),
            (browser + #", "authorizationParams": { "prompt": "${UNSET_PROMPT}" }"#,
             ["$.identities.x.authorizationParams.prompt: environment variable UNSET_PROMPT is not set"]),
            (#""clientId": "svc", "clientSecret": "s", "authorizationParams": { "prompt": "consent" }"#,
             ["$.identities.x.authorizationParams: authorizationParams is only used by the authorization_code grant's "
                + "authorization request, not by the client_credentials grant"]),
            (#""grant": "device_code", "clientId": "tv", "deviceAuthorizationUrl": "https://idp/device", "#
                + #""authorizationParams": { "prompt": "consent" }"#,
             ["$.identities.x.authorizationParams: authorizationParams is only used by the authorization_code grant's "
                + "authorization request, not by the device_code grant"]),
        ]
        for (body, expected) in cases {
            XCTAssertEqual(identityErrors(body), expected, body)
        }
    }

    // MARK: - responseFields

    func testNestedResponseFieldsAreDecoded() throws {
        let identity = try identity(#"""
        "clientId": "c", "clientSecret": "s", "responseFields": {
          "token": ["authed_user.access_token", "access_token"], "expiry": "authed_user.expires_in",
          "type": "authed_user.token_type", "refreshToken": ["authed_user.refresh_token", "refresh_token"],
          "scope": ["authed_user.scope", "scope"], "typeValues": { "User": "bearer", "bot": "Bearer" } }
        """#)
        let fields = identity.responseFields
        XCTAssertEqual(fields.token.paths, [["authed_user", "access_token"], ["access_token"]])
        XCTAssertEqual(fields.expiry.paths, [["authed_user", "expires_in"]])
        XCTAssertEqual(fields.type.paths, [["authed_user", "token_type"]])
        XCTAssertEqual(fields.refreshToken.paths, [["authed_user", "refresh_token"], ["refresh_token"]])
        XCTAssertEqual(fields.scope.paths, [["authed_user", "scope"], ["scope"]])
        XCTAssertEqual(try self.identity(#""clientId": "c", "clientSecret": "s""#).responseFields.scope.paths, [["scope"]])
        XCTAssertEqual(fields.typeValues, ["user": "Bearer", "bot": "Bearer"], "names lowercased, types normalized")
    }

    func testATypeMappedToDPoPNeedsADPoPKey() throws {
        let mapped = #""clientId": "c", "clientSecret": "s", "responseFields": { "typeValues": { "pop": "dpop" } }"#
        XCTAssertEqual(try identity(mapped + #", "dpop": true"#).responseFields.typeValues, ["pop": "DPoP"])
        let refused = [#"$.identities.x.responseFields.typeValues.pop: maps to DPoP, but the identity has no dpop key to prove "#
                       + "possession with"]
        XCTAssertEqual(identityErrors(mapped), refused)
        XCTAssertEqual(identityErrors(mapped + #", "dpop": false"#), refused)
    }

    /// The refusal table: each bad `responseFields` -> the exact error at its JSON path.
    func testResponseFieldsRefusals() {
        let emptyName = "has an empty member name: names are joined by single dots, none first or last "
            + "(a member whose own name holds a dot cannot be named)"
        let known = "is a token type the relay knows already; map only the IdP's own names"
        let cases: [(String, [String])] = [
            (#"{ "token": "authed_user..access_token" }"#,
             [#"$.identities.x.responseFields.token: "authed_user..access_token" "# + emptyName]),
            (#"{ "token": ".access_token" }"#, [#"$.identities.x.responseFields.token: ".access_token" "# + emptyName]),
            (#"{ "expiry": "authed_user." }"#, [#"$.identities.x.responseFields.expiry: "authed_user." "# + emptyName]),
            (#"{ "type": "." }"#, [#"$.identities.x.responseFields.type: "." "# + emptyName]),
            (#"{ "refreshToken": ["authed_user.refresh_token", "a..b"] }"#,
             [#"$.identities.x.responseFields.refreshToken[1]: "a..b" "# + emptyName]),
            (#"{ "token": "" }"#, ["$.identities.x.responseFields.token: must not be empty"]),
            (#"{ "token": [] }"#, ["$.identities.x.responseFields.token: expected at least one member name"]),
            (#"{ "token": ["access_token", 7] }"#, ["$.identities.x.responseFields.token[1]: expected a string, got number"]),
            (#"{ "token": { "path": "a" } }"#,
             ["$.identities.x.responseFields.token: expected a string or an array of strings, got object"]),
            (#"{ "typeValues": { "user": "MAC" } }"#,
             [#"$.identities.x.responseFields.typeValues.user: expected Bearer or DPoP, the token types the relay can send, got "MAC""#]),
            (#"{ "typeValues": { "user": 1 } }"#, ["$.identities.x.responseFields.typeValues.user: expected a string, got number"]),
            (#"{ "typeValues": { "bearer": "DPoP" } }"#,
             ["$.identities.x.responseFields.typeValues.bearer: bearer " + known]),
            (#"{ "typeValues": { "DPoP": "Bearer" } }"#,
             ["$.identities.x.responseFields.typeValues.DPoP: DPoP " + known]),
            (#"{ "typeValues": { "user": "Bearer", "USER": "Bearer" } }"#,
             [#"$.identities.x.responseFields.typeValues.USER: "USER" names the same token type as an earlier key "#
                + "(token types compare case-insensitively)"]),
            (#"{ "typeValues": { "": "Bearer" } }"#, [#"$.identities.x.responseFields.typeValues[""]: a token type name must not be empty"#]),
            (#"{ "typeValues": ["user"] }"#, ["$.identities.x.responseFields.typeValues: expected an object, got array"]),
            (#"{ "scope": "a..b" }"#, [#"$.identities.x.responseFields.scope: "a..b" "# + emptyName]),
            (#"{ "token": ["a.access_token", "access_token"], "refreshToken": ["a.r", "b.r", "r"] }"#,
             ["$.identities.x.responseFields.refreshToken: has 3 paths but token has 2: the i-th path of each member is read for a "
                + "token found by token's i-th, so give one path (read whatever the alternative) or 2"]),
            (#"{ "scope": ["a.scope", "scope"] }"#,
             ["$.identities.x.responseFields.scope: has 2 paths but token has 1: the i-th path of each member is read for a "
                + "token found by token's i-th, so give one path (read whatever the alternative) or 1"]),
        ]
        for (fields, expected) in cases {
            XCTAssertEqual(identityErrors(#""clientId": "c", "clientSecret": "s", "responseFields": "# + fields), expected, fields)
        }
    }
}
