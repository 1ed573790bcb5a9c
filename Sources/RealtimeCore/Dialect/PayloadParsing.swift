/// A dialect machine's side of the engine's hint that handlers read payloads
/// (``DialectMachine/payloadsAreRead(_:)``): whether the payload of the event at hand is parsed on arrival
/// or left as checked text. While handlers read payloads it is parsed, except in one event of
/// ``probeInterval``, left as text so that the engine keeps seeing whether they still read them.
package struct PayloadParsing: Sendable {
    package static let probeInterval = 256
    private var payloadsRead = false
    private var eventsUntilProbe = 0

    package init() {}

    /// Takes the engine's hint.
    package mutating func update(payloadsRead read: Bool) {
        payloadsRead = read
        eventsUntilProbe = Self.probeInterval
    }

    /// Whether to parse the payload of the event at hand now; each call counts one event toward the probe.
    package mutating func parsesNow() -> Bool {
        guard payloadsRead else { return false }
        eventsUntilProbe -= 1
        guard eventsUntilProbe <= 0 else { return true }
        eventsUntilProbe = Self.probeInterval
        return false
    }
}
