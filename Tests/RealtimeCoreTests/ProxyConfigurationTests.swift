import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Proxy configuration")
struct ProxyConfigurationTests {
    private func proxy(_ url: String, _ environment: [String: String]) throws(RealtimeError) -> ProxyConfiguration? {
        try ProxyConfiguration.fromEnvironment(for: URL(string: url)!, environment: environment)
    }

    @Test("wss and https read https_proxy, then HTTPS_PROXY; never the http variables")
    func secureVariables() throws {
        #expect(try proxy("wss://api.example.com/socket", ["HTTPS_PROXY": "http://upper:3128"])
            == ProxyConfiguration(host: "upper", port: 3128))
        #expect(try proxy("https://api.example.com", ["https_proxy": "lower:8080", "HTTPS_PROXY": "upper:3128"])
            == ProxyConfiguration(host: "lower", port: 8080))
        #expect(try proxy("wss://api.example.com", ["http_proxy": "plain:3128", "HTTP_PROXY": "plain:3128"]) == nil)
        #expect(try proxy("wss://api.example.com", ["https_proxy": "  "]) == nil)   // empty counts as unset
        #expect(try proxy("wss://api.example.com", [:]) == nil)
    }

    @Test("ws and http read http_proxy, then HTTP_PROXY, except in a CGI program (httpoxy)")
    func plainVariables() throws {
        #expect(try proxy("ws://api.example.com", ["HTTP_PROXY": "p:1"]) == ProxyConfiguration(host: "p", port: 1))
        #expect(try proxy("http://api.example.com", ["http_proxy": "a:2", "HTTP_PROXY": "b:3"])
            == ProxyConfiguration(host: "a", port: 2))
        #expect(try proxy("ws://api.example.com", ["HTTP_PROXY": "p:1", "REQUEST_METHOD": "GET"]) == nil)
        #expect(try proxy("ws://api.example.com", ["http_proxy": "p:1", "REQUEST_METHOD": "GET"])
            == ProxyConfiguration(host: "p", port: 1))
        #expect(try proxy("ws://api.example.com", ["https_proxy": "p:1"]) == nil)
    }

    @Test("the value: scheme optional, port 80 by default, percent-encoded credentials, IPv6 in brackets")
    func values() throws {
        #expect(try proxy("wss://x.example", ["https_proxy": "proxy.corp"]) == ProxyConfiguration(host: "proxy.corp", port: 80))
        #expect(try proxy("wss://x.example", ["https_proxy": "HTTP://proxy.corp:3128/"])
            == ProxyConfiguration(host: "proxy.corp", port: 3128))
        #expect(try proxy("wss://x.example", ["https_proxy": "http://[fd00::1]:3128"])
            == ProxyConfiguration(host: "fd00::1", port: 3128))
        let withCredentials = try #require(try proxy("wss://x.example", ["https_proxy": "http://al%40ice:p%3Ass%20w@proxy:3128"]))
        #expect(withCredentials.credentials == .init(username: "al@ice", password: "p:ss w"))
        #expect(withCredentials.authorizationHeaderValue == "Basic " + Data("al@ice:p:ss w".utf8).base64EncodedString())
        #expect(try proxy("wss://x.example", ["https_proxy": "http://bob@proxy:3128"])?.credentials
            == .init(username: "bob", password: ""))
    }

    @Test("an https:// or socks proxy is unsupported, a value that is not a URL is invalid; neither leaks credentials")
    func badValues() {
        for (value, code) in [("https://user:pw@proxy:443", RealtimeError.Code.unsupported),
                              ("socks5://user:pw@proxy:1080", .unsupported),
                              ("http://user:pw@", .invalidArgument),
                              ("http://proxy:99999", .invalidArgument)] {
            do {
                let found = try proxy("wss://x.example", ["https_proxy": value])
                Issue.record("\(value) gave \(String(describing: found))")
            } catch {
                #expect(error.code == code, "\(value): \(error)")
                #expect(!"\(error)".contains("pw"), "\(error)")
            }
        }
    }

    @Test("NO_PROXY: names and the names under them, IPs, CIDR ranges, ports, *; loopback is always direct",
          arguments: [
              ("wss://api.example.com", "example.com", true),
              ("wss://api.example.com", ".example.com", true),
              ("wss://example.com", ".example.com", true),        // as curl: the domain itself too
              ("wss://api.example.com", "*.example.com", true),
              ("wss://API.Example.COM.", "example.com", true),    // case and a trailing dot
              ("wss://notexample.com", "example.com", false),
              ("wss://example.com.evil", "example.com", false),
              ("wss://api.example.com", "other.org, example.com", true),
              ("wss://api.example.com", "other.org example.com", true),
              ("wss://api.example.com", "*", true),
              ("wss://api.example.com", "example.com:443", true),
              ("wss://api.example.com", "example.com:8443", false),
              ("wss://api.example.com:8443", "example.com:8443", true),
              ("wss://10.1.2.3", "10.1.2.3", true),
              ("wss://10.1.2.3", "10.1.2.4", false),
              ("wss://10.1.2.3", "10.0.0.0/8", true),
              ("wss://11.1.2.3", "10.0.0.0/8", false),
              ("wss://10.1.2.3", "10.1.2.0/30", true),
              ("wss://10.1.2.9", "10.1.2.0/30", false),
              ("wss://[fd00::5]", "fd00::/8", true),
              ("wss://[fd00::5]", "fd00:0::5", true),             // compared as addresses
              ("wss://[fd00::5]:8443", "[fd00::5]:8443", true),
              ("wss://[fd00::5]", "[fd00::5]:8443", false),
              ("wss://10.1.2.3", "3", false),                    // a name never matches an address by suffix
              ("wss://127.0.0.1:3000", "", true),                 // loopback: never proxied
              ("wss://localhost", "", true),
              ("wss://[::1]", "", true),
          ])
    func noProxy(url: String, noProxy: String, direct: Bool) throws {
        var environment = ["https_proxy": "http://proxy:3128"]
        if !noProxy.isEmpty { environment["NO_PROXY"] = noProxy }
        let found = try proxy(url, environment)
        #expect((found == nil) == direct, "\(url) with NO_PROXY=\(noProxy): \(String(describing: found))")
    }

    @Test("no_proxy wins over NO_PROXY")
    func lowerCaseNoProxyFirst() throws {
        let environment = ["https_proxy": "p:1", "no_proxy": "other.org", "NO_PROXY": "example.com"]
        #expect(try proxy("wss://example.com", environment) != nil)
    }

    @Test("credentials never reach description, debugDescription, dump or string interpolation")
    func redacted() {
        let configuration = ProxyConfiguration(host: "proxy.corp", port: 3128,
                                               credentials: .init(username: "alice", password: "Sup3rS3cret"))
        var dumped = ""
        dump(configuration, to: &dumped)
        var dumpedCredentials = ""
        dump(configuration.credentials, to: &dumpedCredentials)
        for text in [configuration.description, String(reflecting: configuration), "\(configuration)", dumped,
                     "\(configuration.credentials!)", String(reflecting: configuration.credentials!), dumpedCredentials] {
            #expect(!text.contains("Sup3rS3cret") && !text.contains("alice"), "\(text)")
        }
        #expect(configuration.description == "proxy proxy.corp:3128 with credentials <redacted>")
        #expect(ProxyConfiguration(host: "[fd00::1]", port: 8080).description == "proxy [fd00::1]:8080")
    }

    @Test("validation: host, port, a colon in the user name, control characters")
    func validation() {
        #expect(throws: Never.self) { try ProxyConfiguration(host: "p", port: 3128).validate() }
        for bad in [ProxyConfiguration(host: "", port: 3128), ProxyConfiguration(host: "p", port: 0),
                    ProxyConfiguration(host: "p q", port: 1),
                    ProxyConfiguration(host: "p", port: 1, credentials: .init(username: "a:b", password: "c")),
                    ProxyConfiguration(host: "p", port: 1, credentials: .init(username: "a", password: "c\r\nX: y"))] {
            #expect(throws: RealtimeError.self, "\(bad)") { try bad.validate() }
        }
    }
}
