import RealtimeCore
import Testing

@Suite("Dictionary room")
struct DictionaryRoomTests {
    @Test("a dictionary emptied after a burst lets go of its room and keeps what is left")
    func sparseDictionaryShrinks() {
        var timers: [Int: String] = [:]
        for key in 0..<10_000 { timers[key] = "t\(key)" }
        let burstCapacity = timers.capacity
        for key in 10..<10_000 {
            timers[key] = nil
            timers.releaseRoomIfSparse()
        }
        #expect(burstCapacity >= 10_000)
        #expect(timers.capacity <= 256)  // the room always kept
        #expect(timers == Dictionary(uniqueKeysWithValues: (0..<10).map { ($0, "t\($0)") }))
    }

    @Test("room for a few hundred entries is kept: re-arming a timer per channel on each reconnect does not regrow")
    func smallRoomIsKept() {
        var timers: [Int: Int] = [:]
        for key in 0..<150 { timers[key] = key }
        let capacity = timers.capacity
        for key in 0..<150 {
            timers[key] = nil
            timers.releaseRoomIfSparse()
        }
        #expect(capacity >= 150)
        #expect(timers.capacity == capacity)
    }

    @Test("a dictionary still more than an eighth full keeps its room")
    func fullEnoughDictionaryKeepsRoom() {
        var timers: [Int: Int] = [:]
        for key in 0..<1_000 { timers[key] = key }
        let capacity = timers.capacity
        for key in 0..<(1_000 - capacity / 8 - 1) { timers[key] = nil }
        timers.releaseRoomIfSparse()
        #expect(timers.capacity == capacity)
    }
}
