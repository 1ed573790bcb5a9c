@_spi(DialectAuthoring) @testable import RealtimeCore
import Testing

/// Every received event passes through a `DialectAction` and a `Delivery`: their rare cases that carry a
/// 144-byte error are boxed, so the common ones stay small (boxing them made the bulk benchmark 3–10 % faster).
/// A session may join tens of thousands of channels, so a channel's record stays a few bytes.
@Suite("Per-event and per-channel value sizes")
struct EngineValueSizeTests {
    @Test("a Delivery is at most 32 bytes and a DialectAction at most 72, whatever RealtimeError weighs")
    func perEventValuesStaySmall() {
        #expect(MemoryLayout<RealtimeError>.size > 64)   // what the boxing is for
        #expect(MemoryLayout<Delivery>.stride <= 32)
        #expect(MemoryLayout<DialectAction>.stride <= 72)
    }

    @Test("a joined channel's record is at most 8 bytes: what most channels never have lives in side tables")
    func channelRecordStaysSmall() {
        #expect(ChannelTable.recordStride <= 8)
    }
}
