/// One chat message as every backend carries it: the JSON object `{"author": …, "text": …}`.
public struct ChatMessage: Codable, Sendable, Hashable, CustomStringConvertible {
    public var author: String
    public var text: String

    public init(author: String, text: String) {
        self.author = author
        self.text = text
    }

    public var description: String { "\(author): \(text)" }
}
