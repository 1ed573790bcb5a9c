import RealtimeCore
import Testing

@Suite("Array room")
struct ArrayRoomTests {
    @Test("an emptied buffer keeps its room up to the limit, and lets go of a burst's")
    func roomUpToTheLimit() {
        var steady = Array(0..<100)
        let room = steady.capacity
        steady.removeAll(keepingRoomUpTo: 128)
        #expect(steady.isEmpty)
        #expect(steady.capacity == room)

        var burst = Array(0..<10_000)
        burst.removeAll(keepingRoomUpTo: 128)
        #expect(burst.isEmpty)
        #expect(burst.capacity == 0)
    }
}
