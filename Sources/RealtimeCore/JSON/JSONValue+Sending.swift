extension JSONValue {
    /// Throws when this value cannot travel as JSON text: containers nested deeper than
    /// `limits.maximumDepth` (`.limitExceeded`; the same bound the parser puts on what arrives), or a
    /// double that is NaN or infinite (`.invalidArgument`; JSON has no form for them and writing `null`
    /// instead would change the app's data without a word).
    ///
    /// The walk is iterative, so a value nested far too deep is reported, not a stack overflow.
    public func validateForSending(limits: JSONLimits = .default) throws(RealtimeError) {
        var pending: [(value: JSONValue, depth: Int)] = [(self, 0)]
        while let (value, depth) = pending.popLast() {
            switch value {
            case .array(let elements):
                guard depth < limits.maximumDepth else { throw Self.tooDeep(limits) }
                for element in elements { pending.append((element, depth + 1)) }
            case .object(let members):
                guard depth < limits.maximumDepth else { throw Self.tooDeep(limits) }
                for member in members.values { pending.append((member, depth + 1)) }
            case .double(let number) where !number.isFinite:
                throw RealtimeError(.invalidArgument, "\(number) has no JSON form; send it as a string or null",
                                    context: .init(detail: "non-finite number"))
            case .null, .bool, .integer, .double, .string, .binary:
                continue
            }
        }
    }

    private static func tooDeep(_ limits: JSONLimits) -> RealtimeError {
        RealtimeError(.limitExceeded, "the value is nested deeper than \(limits.maximumDepth) levels",
                      context: .init(detail: "JSONLimits.maximumDepth"))
    }
}
