import ArgumentParser
import Config
import FoundationEssentials
import EventLoop
import Logging
import Proxy

/// `oauth-relay demo`: the relay on its embedded default, in front of an echo upstream it
/// starts itself, all on loopback.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the relay on its embedded demo configuration, with its own echo upstream, on loopback.")

    @Option(name: .long, help: "Where the relay listens.")
    var listen: String = "127.0.0.1:8180"

    @Option(name: .long, help: "Port of the demo echo upstream on 127.0.0.1.")
    var upstreamPort: UInt16 = 9001

    @Option(name: .long, help: "Where the admin listener serves /healthz, /readyz and /identities.")
    var admin: String = "127.0.0.1:9180"

    @OptionGroup var common: CommonOptions

    /// The embedded default. It goes through the same loader as a file, so it is validated
    /// the same way.
    static func configJSON(listen: String, admin: String, upstreamPort: UInt16) -> String {
        """
        {
          "listen": "\(listen)",
          "admin": "\(admin)",
          "workers": 1,
          "accessLog": true,
          "identities": {
            "demo": {
              "tokenUrl": "http://127.0.0.1:\(upstreamPort)\(DemoEchoServer.tokenPath)",
              "grant": "client_credentials",
              "clientId": "oauth-relay-demo",
              "clientSecret": "dev-only-not-a-secret",
              "scope": "demo.read"
            }
          },
          "routes": [
            {
              "name": "demo-echo",
              "match": { "pathPrefix": "/" },
              "upstream": "http://127.0.0.1:\(upstreamPort)",
              "identity": "demo",
              "setHeaders": { "X-Demo": "added by oauth-relay" }
            }
          ]
        }
        """
    }

    func run() throws {
        common.bootstrapLogging()
        let logger = Logger(label: "oauth-relay")
        let json = Self.configJSON(listen: listen, admin: admin, upstreamPort: upstreamPort)
        let config: RelayConfig
        do {
            config = try ConfigLoader.decode(json: Data(json.utf8), baseDirectory: ".", environment: [:])
        } catch {
            FileHandleOutput.standardError("oauth-relay demo: \(error.description)\n")
            throw ExitCode(1)
        }
        let echo: DemoEchoServer
        do {
            echo = try DemoEchoServer(address: SocketAddress(ip: "127.0.0.1", port: upstreamPort)!)
        } catch {
            logger.critical("cannot start the demo echo upstream", metadata: ["port": "\(upstreamPort)", "error": "\(error)"])
            throw ExitCode(1)
        }
        defer { echo.stop() }
        try serve(config, logger: logger) { server in
            FileHandleOutput.standardError("""

            oauth-relay demo: relay on \(server.boundAddress), echo upstream and a DEV-ONLY token issuer on 127.0.0.1:\(upstreamPort)
            Try:  curl -s http://\(server.boundAddress)/hello
            The echo shows the request as the upstream got it: the Authorization header is the identity
            "demo"'s token (a new one every \(DemoEchoServer.devTokenSeconds / 2) s or so), plus X-Demo, Via and X-Forwarded-*.
            The identity's state (never its token): curl -s http://\(admin)/identities
            Ctrl-C stops.


            """)
        }
    }
}
