import Testing
import RealtimeCore

@Suite("ChannelID")
struct ChannelIDTests {
    @Test("params given in any order make equal channels with equal hashes; reads and writes go through the dictionary")
    func paramsAreAValue() {
        var built: [String: JSONValue] = [:]
        for key in ["zeta", "alpha", "mid", "beta"] { built[key] = .string(key) }
        let first = ChannelID("RoomChannel", params: built)
        let second = ChannelID("RoomChannel", params: ["beta": "beta", "mid": "mid", "alpha": "alpha", "zeta": "zeta"])
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(Set([first, second]).count == 1)
        #expect(first.params == built)
        #expect(first.hasParams)

        var changed = first
        changed.params["alpha"] = 1
        #expect(changed != first)
        #expect(changed.params["alpha"] == 1)
        #expect(changed.params.count == 4)
        changed.params["alpha"] = "alpha"
        #expect(changed == first)

        #expect(ChannelID("RoomChannel") != ChannelID("RoomChannel", params: ["room": 1]))
        #expect(ChannelID("RoomChannel", params: ["room": 1]) != ChannelID("RoomChannel", params: ["room": 2]))
        #expect(!ChannelID("room-1").hasParams)
        #expect(ChannelID("RoomChannel", params: ["room": 1]).description == #"RoomChannel{"room":1}"#)
    }
}
