extension Dictionary {
    /// Lets go of the room a burst left behind. A dictionary never shrinks on its own, so one that once held
    /// a timer for each of 10,000 channels would keep their buckets for the session's life. It is rebuilt
    /// once it is an eighth full or less; the removals that emptied it pay for the rebuild. Room for up to
    /// 256 entries (a few KiB) is always kept: a reconnect that re-joins a hundred channels arms and cancels
    /// a timer for each, and must not rebuild and regrow its tables every time.
    package mutating func releaseRoomIfSparse() {
        guard capacity > 256, count <= capacity / 8 else { return }
        var smaller = Self(minimumCapacity: count)
        for (key, value) in self { smaller[key] = value }
        self = smaller
    }
}
