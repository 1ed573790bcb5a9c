extension Array {
    /// Empties the array, keeping its room for the next fill unless that room is more than `limit`
    /// elements: a buffer reused for every batch then allocates nothing in a steady stream, and a burst's
    /// room is let go instead of being held for good.
    package mutating func removeAll(keepingRoomUpTo limit: Int) {
        if capacity > limit {
            self = []
        } else {
            removeAll(keepingCapacity: true)
        }
    }
}
