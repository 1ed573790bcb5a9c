@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Session logging")
struct SessionLoggingTests {
    @Test("frames are traced through the hook with secrets redacted, and levels filter")
    func tracing() async throws {
        let records = Locked<[LogRecord]>([])
        let harness = EngineHarness(options: {
            $0.logLevel = .trace
            $0.logHandler = { record in records.withLock { $0.append(record) } }
        })
        try await harness.session.connect()
        harness.session.channel("room")
        harness.peers[0].send(text: #"{"t":"ev","name":"x","data":{"token":"s3cr3t-value"}}"#)
        let lines = records.withLock { $0 }
        #expect(lines.contains { $0.level == .trace && $0.message.hasPrefix("→") && $0.message.contains("\"sub\"") })
        #expect(lines.contains { $0.message.contains("<redacted>") })
        #expect(!lines.contains { $0.message.contains("s3cr3t-value") })
        #expect(lines.allSatisfy { $0.source == "line" })

        let quiet = Locked<[LogRecord]>([])
        let info = EngineHarness(options: {
            $0.logLevel = .info
            $0.logHandler = { record in quiet.withLock { $0.append(record) } }
        })
        try await info.session.connect()
        info.peers[0].drop()
        let infoLines = quiet.withLock { $0 }
        #expect(infoLines.allSatisfy { $0.level >= .info })
        #expect(infoLines.contains { $0.message.contains("connection ended") })
    }
}
