extension Dictionary {
    /// Lets go of the room a burst left behind. A dictionary never shrinks on its own, so one that once held
    /// a timer for each of 10,000 channels would keep their buckets for the session's life. It is rebuilt
    /// once it is an eighth full or less; the removals that emptied it pay for the rebuild.
    package mutating func releaseRoomIfSparse() {
        guard capacity > 64, count <= capacity / 8 else { return }
        var smaller = Self(minimumCapacity: count)
        for (key, value) in self { smaller[key] = value }
        self = smaller
    }
}
