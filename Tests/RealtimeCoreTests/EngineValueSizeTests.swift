@_spi(DialectAuthoring) @testable import RealtimeCore
import Testing

/// Every received event passes through a `DialectAction` and a `Delivery`: their rare cases that carry an
/// error are boxed, so the common ones stay small (boxing them made the bulk benchmark 3–10 % faster). Every
/// read passes through an `EngineInput`, copied into the session's mailbox and out again: an error's context
/// is boxed, so an error is 40 bytes instead of 144 and an input 97 instead of 201 (batch-of-one rounds of
/// `realtime-bench session` 9–11 % faster). A session may join tens of thousands of channels, so a channel's
/// record stays a few bytes.
@Suite("Per-event and per-channel value sizes")
struct EngineValueSizeTests {
    @Test("a Delivery is at most 32 bytes and a DialectAction at most 72, whatever RealtimeError weighs")
    func perEventValuesStaySmall() {
        #expect(MemoryLayout<Delivery>.stride <= 32)
        #expect(MemoryLayout<DialectAction>.stride <= 72)
    }

    @Test("an error is at most 40 bytes, so a read's TransportEvent is at most 48 and its EngineInput at most 104")
    func perReadValuesStaySmall() {
        #expect(MemoryLayout<RealtimeError>.size <= 40)
        #expect(MemoryLayout<TransportEvent>.size <= 48)
        #expect(MemoryLayout<EngineInput>.size <= 104)
    }

    @Test("a joined channel's record is at most 8 bytes: what most channels never have lives in side tables")
    func channelRecordStaysSmall() {
        #expect(ChannelTable.recordStride <= 8)
    }
}
