import Foundation
import Realtime

/// `realtime-bench scale server`: every dialect's server on one port, told apart by the request path, on the
/// library's `WebSocketServer` with one loop thread, in a child process so that the clients' memory is
/// measured alone. It says each dialect's opening, confirms every subscription, answers Pusher pings, beats
/// for Action Cable every 3 s, and on `drop` (stdin) aborts every connection and prints `DROPPED n`.
enum ScaleServer {
    struct Client {
        let connection: WebSocketServerConnection
        let dialect: BenchDialect
    }

    static func run(arguments: [String]) throws {
        let files = Measure.raiseFileLimit()
        let clients = Locked<[ObjectIdentifier: Client]>([:])
        let accepted = Locked(0)
        let group = try EventLoopGroup(threadCount: 1)
        let server = try WebSocketServer(configuration: .init(backlog: 4096), group: group, shouldUpgrade: { request in
            guard let dialect = BenchDialect(path: request.path) else { return .reject(status: 404, reason: "Not Found") }
            return .accept(subprotocol: dialect.subprotocol(offered: request.subprotocols))
        }, handler: { connection, event in
            let key = ObjectIdentifier(connection)
            switch event {
            case .opened:
                guard let dialect = connection.request.flatMap({ BenchDialect(path: $0.path) }) else {
                    connection.abort()
                    return
                }
                let number = accepted.withLock { count -> Int in
                    count += 1
                    return count
                }
                clients.withLock { $0[key] = Client(connection: connection, dialect: dialect) }
                connection.send(dialect.opening(connection: number).map(TransportFrame.text))
            case .received(let frames):
                guard let dialect = clients.withLock({ $0[key]?.dialect }) else { return }
                var replies: [TransportFrame] = []
                for case .text(let text) in frames {
                    replies += dialect.answer(text).replies.map(TransportFrame.text)
                }
                if !replies.isEmpty { connection.send(replies) }
            case .closed:
                clients.withLock { $0[key] = nil }
            }
        })
        print("PORT \(server.port)")
        print("FILES \(files)")
        fflush(nil)

        let running = Locked(true)
        Thread.detachNewThread {
            while running.withLock({ $0 }) {
                sleep(3)
                let cables = clients.withLock { $0.values.filter { $0.dialect == .actionCable }.map(\.connection) }
                let beat = BenchDialect.actionCableBeat
                for connection in cables { connection.send(text: beat) }
            }
        }
        while let line = readLine() {
            guard line == "drop" else { continue }
            let all = clients.withLock { $0.values.map(\.connection) }
            for connection in all { connection.abort() }
            print("DROPPED \(all.count)")
            fflush(nil)
        }
        running.withLock { $0 = false }
        server.stop()
        group.shutdown()
    }
}
