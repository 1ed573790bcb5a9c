import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// What an authorizer is asked to sign.
public struct PusherAuthRequest: Sendable, Hashable {
    /// The server's id for this connection (`socket_id` / `connection_id`).
    public var connectionID: String
    /// The channel to authorize; `nil` for a user sign-in.
    public var channel: String?
    /// The session's vendor, whose field names and signed strings apply.
    public var vendor: PusherVendor

    /// A request to sign `channel` (a sign-in when `nil`) for the connection `connectionID`.
    public init(connectionID: String, channel: String?, vendor: PusherVendor) {
        self.connectionID = connectionID
        self.channel = channel
        self.vendor = vendor
    }
}

/// An authorizer's answer: the body of a Pusher `/pusher/auth` or `/pusher/user-auth` response.
public struct PusherAuthorization: Sendable, Hashable {
    /// `<key>:<hex signature>`.
    public var auth: String
    /// Presence identity, sent byte-for-byte as signed (`channel_data` / `member_data`).
    public var channelData: String?
    /// Key of an encrypted channel (base64).
    public var sharedSecret: String?
    /// Sign-in identity, sent byte-for-byte as signed (`user_data` / `member_data`).
    public var userData: String?

    /// An answer; only `auth` is required, the others as the channel or sign-in needs them.
    public init(auth: String, channelData: String? = nil, sharedSecret: String? = nil, userData: String? = nil) {
        self.auth = auth
        self.channelData = channelData
        self.sharedSecret = sharedSecret
        self.userData = userData
    }
}

/// How private and presence channels and user sign-in get their signatures: the `auth:` of
/// ``RealtimeDialect/pusher(key:cluster:auth:host:port:useTLS:allowsInsecureTransportToRemoteHosts:liveness:)``
/// and ``RealtimeDialect/bird(key:cluster:auth:host:port:useTLS:allowsInsecureTransportToRemoteHosts:liveness:)``,
/// as ``SocketIOAuth`` and ``ActionCableAuth`` are for the other dialects.
public enum PusherAuth: Sendable {
    /// Your own code signs (usually by calling your backend), asked again for every signature. Throw a
    /// `RealtimeError` to choose the code.
    case provider(@Sendable (PusherAuthRequest) async throws -> PusherAuthorization)
    /// `POST`s to your backend: form-encoded for Pusher (`socket_id`, `channel_name`), JSON for Bird
    /// (`connection_id`, `channel_name`), with extra `headers` and `params`. Sign-in goes to `userURL`.
    /// A status outside 200–299 fails with `.authorizationFailed` and `context.httpStatus`. The requests go
    /// through the session transport's proxy when it has one (`WebSocketTransport.Configuration(proxy:)`),
    /// always verified with the platform's trust, never the transport's pins or extra roots.
    case endpoint(URL, userURL: URL? = nil, headers: [HTTPHeader] = [], params: [String: String] = [:])
    /// Signs in the client with the app secret. **For development and tests only**: an app that ships its
    /// secret lets anyone join any channel. `presenceData` is the presence identity
    /// (`{"user_id":"1"}`), `userData` the sign-in identity (`{"id":"1"}`), `encryptionMasterKey` the 32-byte
    /// key that encrypted channels derive their shared secret from.
    case inline(secret: String, presenceData: String? = nil, userData: String? = nil,
                encryptionMasterKey: [UInt8]? = nil)
    /// Signs locally with the app secret like ``inline(secret:presenceData:userData:encryptionMasterKey:)``,
    /// but asks `userDataFetcher` for the identity every time one is signed (each presence subscribe and
    /// sign-in, again after every reconnect), as PusherSwift's `userDataFetcher` does. The member becomes
    /// `{"user_id", "user_info"}` for presence and `{"id", "user_info"}` for sign-in (Bird: `member_id`,
    /// `member_info` for both). **For development and tests only**, like the other inline signer.
    case inlineFetching(secret: String, encryptionMasterKey: [UInt8]? = nil,
                        userDataFetcher: @Sendable () async throws -> PresenceMember)

    /// Runs the authorizer for `request`; `key` is the app key that prefixes inline signatures; `context`
    /// makes the endpoint's HTTP client (the session transport's route).
    func authorize(_ request: PusherAuthRequest, key: String,
                   context: DialectWorkContext) async throws(RealtimeError) -> PusherAuthorization {
        switch self {
        case .provider(let body):
            return try await RealtimeError.runningAppClosure(
                "the \(request.vendor.displayName) auth provider", channel: request.channel.map { ChannelID($0) }
            ) { try await body(request) }
        case .inline(let secret, let presenceData, let userData, let masterKey):
            return try Self.signInline(request, key: key, secret: secret, presenceData: presenceData,
                                       userData: userData, masterKey: masterKey)
        case .inlineFetching(let secret, let masterKey, let fetch):
            // Only identities need the fetcher; private and encrypted channels sign without one.
            guard request.channel.map({ $0.hasPrefix("presence-") }) ?? true else {
                return try Self.signInline(request, key: key, secret: secret, presenceData: nil, userData: nil,
                                           masterKey: masterKey)
            }
            let member = try await RealtimeError.runningAppClosure(
                "the \(request.vendor.displayName) userDataFetcher", channel: request.channel.map { ChannelID($0) }, fetch)
            let vendor = request.vendor
            let idKey = request.channel == nil ? vendor.signinIDKey : vendor.memberIDKey
            var identity: [String: JSONValue] = [idKey: .string(member.id)]
            if member.info != .null { identity[vendor.memberInfoKey] = member.info }
            let text = JSONValue.object(identity).serialized()
            return try Self.signInline(request, key: key, secret: secret, presenceData: text, userData: text,
                                       masterKey: masterKey)
        case .endpoint(let url, let userURL, let headers, let params):
            let target = request.channel == nil ? (userURL ?? url) : url
            // The app's own backend, not the channels server: the platform's trust, not the transport's
            // (but its proxy, which may be the only way out).
            let client = context.makeBackendHTTPClient()
            defer { client.finish() }
            return try await PusherAuthEndpoint.post(request, to: target, headers: headers, params: params,
                                                     client: client)
        }
    }

    private static func signInline(_ request: PusherAuthRequest, key: String, secret: String, presenceData: String?,
                                   userData: String?, masterKey: [UInt8]?) throws(RealtimeError) -> PusherAuthorization {
        var answer = try sign(request, key: key, secret: secret, presenceData: presenceData, userData: userData)
        if let channel = request.channel, channel.hasPrefix("private-encrypted-") {
            guard let masterKey else {
                throw RealtimeError(.invalidArgument, "the inline signer needs encryptionMasterKey for \(channel)",
                                    context: .init(channel: ChannelID(channel)))
            }
            answer.sharedSecret = sharedSecret(channel: channel, masterKey: masterKey)
        }
        return answer
    }

    /// The key of an encrypted channel, base64: SHA-256(channel name ‖ master key), as Pusher's servers derive it.
    public static func sharedSecret(channel: String, masterKey: [UInt8]) -> String {
        var input = Array(channel.utf8) + masterKey
        var key = SHA256.hash(input)
        defer {
            secureZero(&input)
            secureZero(&key)
        }
        return key.withUnsafeMutableBytes {
            Data(bytesNoCopy: $0.baseAddress!, count: $0.count, deallocator: .none).base64EncodedString()
        }
    }

    /// The inline signer, public for tests and tools.
    public static func sign(_ request: PusherAuthRequest, key: String, secret: String, presenceData: String?,
                            userData: String?) throws(RealtimeError) -> PusherAuthorization {
        let vendor = request.vendor
        guard let channel = request.channel else {
            guard let userData else {
                throw RealtimeError(.invalidArgument, "the inline signer needs userData to sign in")
            }
            let signed = vendor.signinSignedString(connectionID: request.connectionID, identity: userData)
            return PusherAuthorization(auth: "\(key):\(HMACSHA256.hex(signed, key: secret))", userData: userData)
        }
        let identity: String?
        if channel.hasPrefix("presence-") {
            guard let presenceData else {
                throw RealtimeError(.invalidArgument, "the inline signer needs presenceData for \(channel)",
                                    context: .init(channel: ChannelID(channel)))
            }
            identity = presenceData
        } else {
            identity = nil
        }
        let signed = vendor.channelSignedString(connectionID: request.connectionID, channel: channel, identity: identity)
        return PusherAuthorization(auth: "\(key):\(HMACSHA256.hex(signed, key: secret))", channelData: identity)
    }
}

/// The HTTP round-trip of ``PusherAuth/endpoint(_:userURL:headers:params:)``.
enum PusherAuthEndpoint {
    /// Longest auth response body accepted.
    static let maximumBodyCount = 64 * 1024

    /// The request for `auth` (built apart from the round-trip so it can be tested without a network).
    /// `headers` come last and replace a default of the same name (`Accept`, `Content-Type`).
    static func httpRequest(_ auth: PusherAuthRequest, to url: URL, headers: [HTTPHeader],
                            params: [String: String]) -> HTTPRequest {
        var fields = params
        fields[auth.vendor.authIDParameter] = auth.connectionID
        if let channel = auth.channel { fields["channel_name"] = channel }
        var request = HTTPRequest(method: "POST", url: url, timeout: .seconds(20))
        switch auth.vendor.authEncoding {
        case .form:
            request.headers.setValue("application/x-www-form-urlencoded", forName: "Content-Type")
            request.body = Data(formEncoded(fields).utf8)
        case .json:
            request.headers.setValue("application/json", forName: "Content-Type")
            request.body = Data(JSONValue.object(fields.mapValues { .string($0) }).serialized().utf8)
        }
        request.headers.setValue("application/json", forName: "Accept")
        for header in headers { request.headers.setValue(header.value, forName: header.name) }
        return request
    }

    /// `name=value&…` sorted by name, with everything but unreserved characters percent-encoded.
    static func formEncoded(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return fields.sorted { $0.key < $1.key }.map { "\(encode($0.key))=\(encode($0.value))" }.joined(separator: "&")
    }

    /// POSTs `auth` through `client` and reads the answer; a request that gets no answer fails with
    /// `.authorizationFailed`.
    static func post(_ auth: PusherAuthRequest, to url: URL, headers: [HTTPHeader], params: [String: String],
                     client: some HTTPClient) async throws(RealtimeError) -> PusherAuthorization {
        let response: HTTPResponse
        do {
            response = try await client.send(httpRequest(auth, to: url, headers: headers, params: params))
        } catch {
            throw RealtimeError(.authorizationFailed, "the auth endpoint could not be reached",
                                context: .init(channel: auth.channel.map { ChannelID($0) },
                                               detail: "\(url.absoluteString): \(error.message)"))
        }
        return try decode(response.body, status: response.status, auth: auth, endpoint: url)
    }

    /// Checks the status and reads `{auth, channel_data?, shared_secret?, user_data?}` (or Bird's `member_data`).
    static func decode(_ body: Data, status: Int, auth: PusherAuthRequest,
                       endpoint: URL) throws(RealtimeError) -> PusherAuthorization {
        let channel = auth.channel.map { ChannelID($0) }
        guard (200..<300).contains(status) else {
            throw RealtimeError(.authorizationFailed, "the auth endpoint answered HTTP \(status)",
                                context: .init(httpStatus: status, channel: channel,
                                               detail: String(decoding: body.prefix(200), as: UTF8.self)))
        }
        guard body.count <= maximumBodyCount else {
            throw RealtimeError(.limitExceeded, "the auth response is larger than \(maximumBodyCount) bytes",
                                context: .init(httpStatus: status, channel: channel))
        }
        let json: JSONValue
        do {
            json = try JSONValue.parse(body)
        } catch {
            throw RealtimeError(.authorizationFailed, "the auth response is not JSON",
                                context: .init(httpStatus: status, channel: channel, detail: error.message))
        }
        guard let signature = json["auth"]?.stringValue else {
            throw RealtimeError(.authorizationFailed, "the auth response has no 'auth' string",
                                context: .init(httpStatus: status, serverPayload: json, channel: channel))
        }
        let identityKey = auth.channel == nil ? auth.vendor.signinDataKey : auth.vendor.subscribeIdentityKey
        let identity = json[identityKey]?.stringValue
        if auth.channel == nil, identity == nil {
            throw RealtimeError(.authorizationFailed, "the sign-in auth response has no '\(identityKey)' string",
                                context: .init(httpStatus: status, serverPayload: json))
        }
        return PusherAuthorization(auth: signature, channelData: auth.channel == nil ? nil : identity,
                                   sharedSecret: json["shared_secret"]?.stringValue,
                                   userData: auth.channel == nil ? identity : nil)
    }
}

extension PusherAuth {
    /// The old spelling of ``provider(_:)``.
    @available(*, deprecated, renamed: "provider")
    public static func custom(_ body: @escaping @Sendable (PusherAuthRequest) async throws -> PusherAuthorization)
        -> PusherAuth {
        .provider(body)
    }
}

/// The old name of ``PusherAuth``.
@available(*, deprecated, renamed: "PusherAuth")
public typealias PusherAuthorizer = PusherAuth
