import Foundation
import Realtime

/// The four dialects the CLI speaks, by their command-line names.
enum DialectKind: String, CaseIterable, Sendable {
    case socketio, pusher, bird, actioncable

    init(_ word: String) throws {
        switch word.lowercased() {
        case "socketio", "socket.io": self = .socketio
        case "pusher": self = .pusher
        case "bird": self = .bird
        case "actioncable", "cable": self = .actioncable
        default: throw UsageError("unknown dialect \(word) (socketio, pusher, bird, actioncable)")
        }
    }

    var vendor: PusherVendor? {
        switch self {
        case .pusher: .pusher
        case .bird: .bird
        case .socketio, .actioncable: nil
        }
    }
}

/// Options that `listen` and `send` share: how to reach the server and which channels to join.
enum ConnectionOptions {
    static let valued: Set<String> = [
        "channel", "header", "timeout",
        "auth", "transport",                                                     // Socket.IO
        "key", "cluster", "region", "secret", "user-data", "auth-endpoint",      // Pusher / Bird
        "encryption-master-key",
        "origin", "param", "event-key",                                          // Action Cable
    ]
    static let flags: Set<String> = ["json", "insecure", "verbose", "help"]
    /// The options only some dialects take.
    static let owners: [String: Set<DialectKind>] = {
        var owners: [String: Set<DialectKind>] = [:]
        for name in ["auth", "transport"] { owners[name] = [.socketio] }
        for name in ["key", "cluster", "region", "secret", "user-data", "auth-endpoint"] { owners[name] = [.pusher, .bird] }
        owners["encryption-master-key"] = [.pusher]   // Bird has no encrypted channels
        for name in ["origin", "param", "event-key"] { owners[name] = [.actioncable] }
        return owners
    }()

    static let help = """
      common:
        --channel C          a channel to join (repeatable; send takes one). Socket.IO: a namespace
                             (/chat; default /);
                             Pusher/Bird: a channel name (private-…, presence-… are signed);
                             Action Cable: ChatChannel or 'ChatChannel{"room":42}'
        --header 'N: v'      an HTTP header (repeatable): on the upgrade request (Socket.IO, Action Cable),
                             on the auth endpoint's requests (Pusher/Bird)
        --json               one JSON object per line on stdout (otherwise readable lines; state, subscriptions
                             and errors go to stderr)
        --insecure           allow ws:// and http:// to a host that is not loopback (every dialect)
        --verbose            the session's log on stderr
      socketio:
        --auth JSON          the CONNECT payload of every namespace ('{"token":"secret"}')
        --transport T        websocket (default), polling, or upgrade (polling, then WebSocket)
      pusher / bird:         <url> is ws(s)://host:port (a self-hosted or embedded server); without it, the cloud
        --key K              the app key (or in the url: ws://host:port/app/K)
        --cluster C          the cluster: Pusher's (default mt1) or Bird's region (default us1; --region R
                             is the same option)
        --secret S           sign private-, presence- and encrypted channels here, with the app secret
                             (development only: never ship a secret)
        --user-data JSON     with --secret: the presence identity ('{"user_id":"1","user_info":{…}}';
                             Bird: member_id, member_info); default: a user id made from the process id
        --encryption-master-key B64   the 32-byte key private-encrypted- channels derive their keys from
        --auth-endpoint URL  your backend's auth endpoint instead of --secret
      actioncable:
        --origin O           the Origin header (default: the url's http(s) origin)
        --param k=v          an identifier parameter added to every channel (v is JSON when it parses)
        --event-key K        a member of a broadcast that names its event (repeatable, tried in order;
                             default: event, then type, then action); a broadcast none of them names is
                             "message"; --event-key '' names every broadcast "message"
    """

    /// The channels of `--channel` (and `--param` for Action Cable).
    static func channels(_ arguments: Arguments, dialect: DialectKind) throws -> [ChannelID] {
        let names = arguments.all("channel")
        switch dialect {
        case .socketio:
            return (names.isEmpty ? ["/"] : names).map { name in ChannelID(name.hasPrefix("/") ? name : "/" + name) }
        case .pusher, .bird:
            guard !names.isEmpty else { throw UsageError("\(dialect.rawValue) needs --channel C") }
            return names.map { ChannelID($0) }
        case .actioncable:
            guard !names.isEmpty else { throw UsageError("actioncable needs --channel C") }
            var shared: [String: JSONValue] = [:]
            for item in arguments.all("param") {
                guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                    throw UsageError("--param takes key=value, not \(item)")
                }
                let text = String(item[item.index(after: equals)...])
                shared[String(item[..<equals])] = (try? JSONValue.parse(text)) ?? .string(text)
            }
            return try names.map { try cableChannel($0, extra: shared) }
        }
    }

    /// `ChatChannel` or `ChatChannel{"room":42}`.
    static func cableChannel(_ text: String, extra: [String: JSONValue]) throws -> ChannelID {
        guard let brace = text.firstIndex(of: "{") else { return ChannelID(text, params: extra) }
        let name = String(text[..<brace])
        guard !name.isEmpty, let params = (try? JSONValue.parse(String(text[brace...])))?.objectValue else {
            throw UsageError("--channel takes ChatChannel or 'ChatChannel{\"room\":42}', not \(text)")
        }
        return ChannelID(name, params: params.merging(extra) { _, added in added })
    }

    /// The dialect for `dialect` at `url` (which Pusher and Bird may omit: they then use the cloud host).
    static func makeDialect(_ dialect: DialectKind, url text: String?, _ arguments: Arguments) throws
        -> any RealtimeDialect {
        try arguments.refuseOptions(notFor: dialect, owners: owners)
        let headers = try arguments.headers()
        let insecure = arguments.flag("insecure")
        switch dialect {
        case .socketio:
            let url = try requireURL(text, schemes: ["http", "https", "ws", "wss"], insecure: insecure)
            let transports: [SocketIODialect.Transport]
            switch arguments.value("transport") ?? "websocket" {
            case "websocket": transports = [.websocket]
            case "polling": transports = [.polling]
            case "upgrade": transports = [.polling, .websocket]
            case let other: throw UsageError("--transport takes websocket, polling or upgrade, not \(other)")
            }
            let auth = try arguments.json("auth").map { value in
                // Refused here (exit 2) rather than by every namespace once connected.
                if let error = SocketIOAuth.payloadError(value, fromProvider: false) {
                    throw UsageError("--auth: \(error.message)")
                }
                return SocketIOAuth.value(value)
            }
            return SocketIODialect(url: url, auth: auth, headers: headers, transports: transports,
                                   defaultNamespaces: [], allowsInsecureTransportToRemoteHosts: insecure)
        case .actioncable:
            let url = try requireURL(text, schemes: ["ws", "wss", "http", "https"], insecure: insecure)
            let keys = arguments.all("event-key")
            return ActionCableDialect.actionCable(url: url, headers: headers, origin: arguments.value("origin"),
                                                  eventNameKeys: keys.isEmpty ? ActionCableDialect.defaultEventNameKeys
                                                                              : keys.filter { !$0.isEmpty },
                                                  allowsInsecureTransportToRemoteHosts: insecure)
        case .pusher, .bird:
            return try pusherDialect(dialect, url: text, arguments, headers: headers, insecure: insecure)
        }
    }

    /// Refuses here (exit 2, naming the flag) a plain url to a remote host that the transport would refuse later.
    private static func requireURL(_ text: String?, schemes: Set<String>, insecure: Bool) throws -> URL {
        guard let text else { throw UsageError("a server url is needed") }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), schemes.contains(scheme),
              let host = url.host else {
            throw UsageError("\(text) is not a \(schemes.sorted().joined(separator: "/")) url")
        }
        if !insecure, scheme == "ws" || scheme == "http", !Loopback.contains(host: host) {
            let secure = schemes.contains("https") ? "https:// or wss://" : "wss://"
            throw UsageError("\(text) is not encrypted and \(host) is not this machine: use \(secure), or pass --insecure")
        }
        return url
    }

    private static func pusherDialect(_ dialect: DialectKind, url text: String?, _ arguments: Arguments,
                                      headers: [HTTPHeader], insecure: Bool) throws -> PusherDialect {
        guard let vendor = dialect.vendor else { throw UsageError("not a Pusher dialect") }
        var host: String?
        var port: Int?
        var tls: Bool?
        var keyInURL: String?
        if let text {
            let url = try requireURL(text, schemes: ["ws", "wss"], insecure: insecure)
            host = url.host
            port = url.port
            tls = url.scheme?.lowercased() == "wss"
            let parts = url.path.split(separator: "/")
            if parts.count == 2, parts[0] == "app" { keyInURL = String(parts[1]) }
        }
        guard let key = arguments.value("key") ?? keyInURL else {
            throw UsageError("\(dialect.rawValue) needs --key (or a url ending in /app/<key>)")
        }
        let authorizer = try pusherAuthorizer(vendor, arguments, headers: headers)
        // --region is Bird's word for the cluster; both are accepted for both vendors.
        let cluster = arguments.value("cluster") ?? arguments.value("region")
        var made: PusherDialect = dialect == .bird
            ? .bird(key: key, cluster: cluster ?? "us1", auth: authorizer, host: host, port: port)
            : .pusher(key: key, cluster: cluster ?? "mt1", auth: authorizer, host: host, port: port)
        if let tls {
            // The url's scheme decides; the transport still refuses ws:// to a remote host without --insecure.
            made.usesTLS = tls
        }
        made.allowsInsecureTransportToRemoteHosts = insecure
        return made
    }

    private static func pusherAuthorizer(_ vendor: PusherVendor, _ arguments: Arguments,
                                         headers: [HTTPHeader]) throws -> PusherAuth? {
        if let endpoint = arguments.value("auth-endpoint") {
            guard arguments.value("secret") == nil else {
                throw UsageError("give --secret or --auth-endpoint, not both")
            }
            guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
                throw UsageError("--auth-endpoint takes an http(s) url, not \(endpoint)")
            }
            return .endpoint(url, headers: headers)
        }
        guard let secret = arguments.value("secret") else { return nil }
        let identity: String
        if let text = arguments.value("user-data") {
            guard let parsed = try? JSONValue.parse(text), parsed[vendor.memberIDKey] != nil else {
                throw UsageError("--user-data takes a JSON object with \"\(vendor.memberIDKey)\", not \(text)")
            }
            identity = text   // signed byte for byte as given
        } else {
            let id = "cli-\(ProcessInfo.processInfo.processIdentifier)"
            identity = JSONValue.object([vendor.memberIDKey: .string(id)]).serialized()
        }
        var masterKey: [UInt8]?
        if let text = arguments.value("encryption-master-key") {
            guard let data = Data(base64Encoded: text), data.count == 32 else {
                throw UsageError("--encryption-master-key takes 32 bytes in base64")
            }
            masterKey = Array(data)
        }
        return .inline(secret: secret, presenceData: identity, userData: nil, encryptionMasterKey: masterKey)
    }
}
