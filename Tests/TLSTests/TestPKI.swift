import Foundation
import TLS
import XCTest

/// Certificates made for the tests with the `openssl` command in a fresh temporary directory:
/// a CA and, signed by it, leaf certificates with EC P-256 keys.
struct TestPKI: Sendable {
    let directory: String

    /// A PEM certificate and its key.
    struct Identity: Sendable {
        let certificate: String
        let key: String
    }

    var caCertificate: String { directory + "/ca.pem" }
    var ca: Identity { Identity(certificate: caCertificate, key: directory + "/ca.key") }
    /// Valid now for `localhost` and `127.0.0.1`.
    var localhost: Identity { identity("localhost") }
    /// `localhost` sent with the CA certificate after it, as servers send their chains.
    var localhostWithCA: Identity { Identity(certificate: directory + "/localhost-chain.pem", key: localhost.key) }
    /// Valid now, for `wrong.example` only.
    var wrongName: Identity { identity("wrong-name") }
    /// For `localhost`, expired in 2020.
    var expired: Identity { identity("expired") }
    /// For `localhost`, valid from 2090.
    var notYetValid: Identity { identity("not-yet-valid") }
    /// `CN=relay-client`, for client authentication.
    var client: Identity { identity("client") }

    private func identity(_ name: String) -> Identity {
        Identity(certificate: "\(directory)/\(name).pem", key: "\(directory)/\(name).key")
    }

    static func generate() throws -> TestPKI {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("oauth-relay-tls-tests-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let pki = TestPKI(directory: directory)
        try pki.makeCA()
        let serverUse = "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
        let now = (start: "20200101000000Z", end: "20891231235959Z")
        try pki.issue("localhost", subject: "/CN=localhost", validity: now,
                      extensions: serverUse + "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        let chain = try String(contentsOfFile: pki.localhost.certificate, encoding: .utf8)
            + String(contentsOfFile: pki.caCertificate, encoding: .utf8)
        try pki.write("localhost-chain.pem", chain)
        try pki.issue("wrong-name", subject: "/CN=wrong.example", validity: now,
                      extensions: serverUse + "subjectAltName=DNS:wrong.example\n")
        try pki.issue("expired", subject: "/CN=localhost", validity: ("20200101000000Z", "20200201000000Z"),
                      extensions: serverUse + "subjectAltName=DNS:localhost\n")
        try pki.issue("not-yet-valid", subject: "/CN=localhost", validity: ("20900101000000Z", "20910101000000Z"),
                      extensions: serverUse + "subjectAltName=DNS:localhost\n")
        try pki.issue("client", subject: "/CN=relay-client", validity: now,
                      extensions: "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
        return pki
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The SHA-256 of the certificate's SubjectPublicKeyInfo (what a `sha256/<base64>` pin holds),
    /// computed by the `openssl` command, independently of the code under test.
    func spkiSHA256(of certificate: String) throws -> [UInt8] {
        let digest = try run("/bin/sh", ["-c", "openssl x509 -in '\(certificate)' -pubkey -noout"
                + " | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary"])
        XCTAssertEqual(digest.count, 32)
        return [UInt8](digest)
    }

    private func makeCA() throws {
        try write("ca.cnf", """
            [ca]
            default_ca = test
            [test]
            database = index.txt
            new_certs_dir = .
            certificate = ca.pem
            private_key = ca.key
            default_md = sha256
            policy = anything
            unique_subject = no
            rand_serial = yes
            [anything]
            commonName = supplied

            """)
        try write("index.txt", "")
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj", "/CN=oauth-relay test CA",
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    }

    /// A key and a certificate signed by the CA, valid from `validity.start` to `validity.end`
    /// (`openssl ca` can date certificates in the past, which `openssl x509` cannot).
    private func issue(_ name: String, subject: String, validity: (start: String, end: String), extensions: String) throws {
        try write("\(name).ext", extensions)
        try openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject])
        try openssl(["ca", "-batch", "-notext", "-config", "ca.cnf", "-startdate", validity.start,
                     "-enddate", validity.end, "-in", "\(name).csr", "-out", "\(name).pem", "-extfile", "\(name).ext"])
    }

    private func write(_ file: String, _ text: String) throws {
        try text.write(toFile: "\(directory)/\(file)", atomically: true, encoding: .utf8)
    }

    private func openssl(_ arguments: [String]) throws {
        _ = try run("/usr/bin/env", ["openssl"] + arguments)
    }

    private func run(_ executable: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestPKIError(message: "\(arguments.joined(separator: " ")) failed: \(errorText)")
        }
        return data
    }
}

struct TestPKIError: Error, Sendable, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// A test class whose tests share one `TestPKI`, made before its first test and removed
/// after its last.
class PKITestCase: XCTestCase {
    // Written only by the class set-up and tear-down, which XCTest runs outside any test.
    nonisolated(unsafe) private static var generated: Result<TestPKI, TestPKIError>?

    override class func setUp() {
        super.setUp()
        do {
            generated = .success(try TestPKI.generate())
        } catch {
            generated = .failure(TestPKIError(message: "cannot make test certificates: \(error)"))
        }
    }

    override class func tearDown() {
        if case .success(let pki)? = generated { pki.remove() }
        generated = nil
        super.tearDown()
    }

    private var liveEnginesBefore = 0

    override func setUp() {
        super.setUp()
        liveEnginesBefore = TLSEngine.liveEngines
    }

    /// Every test is also a leak check: the engines it made, and their OpenSSL state, are freed.
    override func tearDown() {
        XCTAssertEqual(TLSEngine.liveEngines, liveEnginesBefore, "TLS engines left alive")
        super.tearDown()
    }

    func pki() throws -> TestPKI {
        guard let generated = Self.generated else { throw TestPKIError(message: "no test certificates") }
        return try generated.get()
    }
}
