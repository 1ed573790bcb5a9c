/// When a small cache of remembered routes takes a new one: always while it has room; once it is full,
/// only after a remembered route was used or after ``missesToAdmit`` misses in a row. A stream spread over
/// many routes then does not rewrite the cache on every lookup, while a new busy route still gets in soon.
/// The handler registry and Action Cable's subscription table share it.
package struct RouteAdmission: Sendable {
    /// Misses in a row that let a new route replace one that is never used.
    package static let missesToAdmit = 8

    /// Misses since a route was last admitted, or ``missesToAdmit`` once a remembered one is used.
    private var misses = 0

    package init() {}

    /// A remembered route was used: the next new one is admitted at once.
    package mutating func noteHit() {
        misses = Self.missesToAdmit
    }

    /// A lookup missed the remembered routes: whether its route is to be remembered, given whether the
    /// cache is `full`.
    package mutating func admitsMiss(cacheFull full: Bool) -> Bool {
        misses += 1
        guard !full || misses >= Self.missesToAdmit else { return false }
        misses = 0
        return true
    }
}
