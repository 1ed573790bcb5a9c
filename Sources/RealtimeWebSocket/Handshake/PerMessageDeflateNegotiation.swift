import RealtimeCore

/// What a permessage-deflate negotiation settled, in RFC 7692's terms: `client*` is what the client
/// compresses with, `server*` what the server compresses with.
package struct PerMessageDeflateParameters: Sendable, Hashable {
    /// The client's window (8…15); 8 means the client sends uncompressed (zlib cannot deflate with 8).
    package var clientMaxWindowBits: Int
    /// The server's window (8…15): the client inflates with it.
    package var serverMaxWindowBits: Int
    package var clientNoContextTakeover: Bool
    package var serverNoContextTakeover: Bool

    package init(clientMaxWindowBits: Int = 15, serverMaxWindowBits: Int = 15, clientNoContextTakeover: Bool = false,
                 serverNoContextTakeover: Bool = false) {
        self.clientMaxWindowBits = clientMaxWindowBits
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverNoContextTakeover = serverNoContextTakeover
    }
}

/// The client's half of the permessage-deflate negotiation (RFC 7692 §5, §7.1): the offer it sends and
/// the strict check of the server's answer.
enum PerMessageDeflateNegotiation {
    static let extensionName = "permessage-deflate"

    /// The `Sec-WebSocket-Extensions` value offering `options`. `client_max_window_bits` is always offered
    /// (bare at 15), so a server may ask for a smaller window instead of declining.
    static func offer(_ options: PerMessageDeflateOptions) -> String {
        var parts = [extensionName]
        parts.append(options.clientMaxWindowBits < 15
                     ? "client_max_window_bits=\(options.clientMaxWindowBits)" : "client_max_window_bits")
        if let bits = options.serverMaxWindowBits { parts.append("server_max_window_bits=\(bits)") }
        if options.clientNoContextTakeover { parts.append("client_no_context_takeover") }
        if options.serverNoContextTakeover { parts.append("server_no_context_takeover") }
        return parts.joined(separator: "; ")
    }

    /// The parameters the server's `Sec-WebSocket-Extensions` values (every header line) settle, or nil
    /// when it accepted no extension. Throws `.handshakeInvalid` for an extension we did not offer, a
    /// second permessage-deflate, an unknown, repeated or malformed parameter, a window outside 8…15, and an
    /// answer that ignores what we asked (`server_no_context_takeover`, a larger `server_max_window_bits`).
    static func accept(_ values: [String], offered: PerMessageDeflateOptions?) throws(RealtimeError) -> PerMessageDeflateParameters? {
        let detail = values.joined(separator: ", ")
        func invalid(_ message: String) -> RealtimeError {
            RealtimeError(.handshakeInvalid, message, context: .init(httpStatus: 101, detail: detail))
        }
        guard let offered else {
            let answered = values.contains { $0.utf8.contains { !" \t,".utf8.contains($0) } }
            if answered { throw invalid("the server enabled an extension we did not offer") }
            return nil
        }
        var elements: [ExtensionElement] = []
        for value in values {
            guard let parsed = ExtensionElement.parseList(value) else {
                throw invalid("the server's Sec-WebSocket-Extensions is malformed")
            }
            elements += parsed
        }
        guard !elements.isEmpty else { return nil }
        for element in elements where element.name != extensionName {
            throw invalid("the server enabled an extension we did not offer (\(element.name))")
        }
        guard elements.count == 1 else { throw invalid("the server accepted permessage-deflate more than once") }

        var negotiated = PerMessageDeflateParameters(clientMaxWindowBits: offered.clientMaxWindowBits,
                                                     clientNoContextTakeover: offered.clientNoContextTakeover)
        var seen: Set<String> = []
        for (name, value) in elements[0].parameters {
            guard seen.insert(name).inserted else {
                throw invalid("the server's permessage-deflate repeats \(name)")
            }
            switch name {
            case "server_no_context_takeover", "client_no_context_takeover":
                guard value == nil else { throw invalid("the server's permessage-deflate gives \(name) a value") }
                if name == "server_no_context_takeover" {
                    negotiated.serverNoContextTakeover = true
                } else {
                    negotiated.clientNoContextTakeover = true
                }
            case "server_max_window_bits", "client_max_window_bits":
                guard let value, let bits = windowBits(value) else {
                    throw invalid("the server's permessage-deflate \(name) must be 8…15, not \(value ?? "missing")")
                }
                if name == "server_max_window_bits" {
                    if let asked = offered.serverMaxWindowBits, bits > asked {
                        throw invalid("the server's server_max_window_bits=\(bits) exceeds the \(asked) we asked for")
                    }
                    negotiated.serverMaxWindowBits = bits
                } else {
                    // We always offer client_max_window_bits; a value above our own hint changes nothing.
                    negotiated.clientMaxWindowBits = min(bits, offered.clientMaxWindowBits)
                }
            default:
                throw invalid("the server's permessage-deflate has an unknown parameter \(name)")
            }
        }
        if offered.serverNoContextTakeover, !negotiated.serverNoContextTakeover {
            throw invalid("the server's permessage-deflate ignores the server_no_context_takeover we asked for")
        }
        if let asked = offered.serverMaxWindowBits, !seen.contains("server_max_window_bits") {
            throw invalid("the server's permessage-deflate ignores the server_max_window_bits=\(asked) we asked for")
        }
        return negotiated
    }

    /// 8…15 written as RFC 7692 wants it: decimal, no leading zero, no sign.
    static func windowBits(_ text: String) -> Int? {
        guard let first = text.utf8.first, first != UInt8(ascii: "0"), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let value = Int(text), (8...15).contains(value) else { return nil }
        return value
    }
}

/// One element of a `Sec-WebSocket-Extensions` list (RFC 6455 §9.1): a name and its parameters, names
/// lower-cased, quoted values unquoted.
struct ExtensionElement: Equatable {
    var name: String
    var parameters: [(name: String, value: String?)]

    static func == (lhs: ExtensionElement, rhs: ExtensionElement) -> Bool {
        lhs.name == rhs.name && lhs.parameters.elementsEqual(rhs.parameters) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The elements of one header value; empty list elements are skipped (RFC 9110 §5.6.1). Nil when the
    /// value breaks the grammar, or a quoted value is not a token once unquoted.
    static func parseList(_ value: String) -> [ExtensionElement]? {
        var scanner = Scanner(Array(value.utf8))
        var elements: [ExtensionElement] = []
        while true {
            scanner.skipWhitespace()
            if scanner.isAtEnd { return elements }
            if scanner.take(UInt8(ascii: ",")) { continue }
            guard let name = scanner.token() else { return nil }
            var element = ExtensionElement(name: name.lowercased(), parameters: [])
            scanner.skipWhitespace()
            while scanner.take(UInt8(ascii: ";")) {
                scanner.skipWhitespace()
                guard let parameter = scanner.token() else { return nil }
                scanner.skipWhitespace()
                var parameterValue: String?
                if scanner.take(UInt8(ascii: "=")) {
                    scanner.skipWhitespace()
                    if scanner.peek == UInt8(ascii: "\"") {
                        guard let quoted = scanner.quotedString(), HTTPHead.isToken(quoted) else { return nil }
                        parameterValue = quoted
                    } else {
                        guard let token = scanner.token() else { return nil }
                        parameterValue = token
                    }
                    scanner.skipWhitespace()
                }
                element.parameters.append((parameter.lowercased(), parameterValue))
            }
            elements.append(element)
            guard scanner.isAtEnd || scanner.take(UInt8(ascii: ",")) else { return nil }
        }
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index >= bytes.count }
        var peek: UInt8? { isAtEnd ? nil : bytes[index] }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 { index += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard peek == byte else { return false }
            index += 1
            return true
        }

        mutating func token() -> String? {
            let start = index
            while let byte = peek, HTTPHead.isTokenCharacter(byte) { index += 1 }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// A quoted-string with its backslash escapes undone; nil when it never closes.
        mutating func quotedString() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            var value: [UInt8] = []
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return String(decoding: value, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = peek else { return nil }
                    index += 1
                    value.append(escaped)
                default:
                    value.append(byte)
                }
            }
            return nil
        }
    }
}
