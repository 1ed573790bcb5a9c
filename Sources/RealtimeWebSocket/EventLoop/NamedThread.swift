import Foundation
#if canImport(CRealtimeLinux)
import CRealtimeLinux  // thread naming (see its shim.h)
#endif

/// Starts a thread named `name` (at most 15 bytes are kept on Linux) that runs `body`; `stackSize` nil keeps
/// the platform's default stack.
func startNamedThread(_ name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        #if os(Linux) || os(Android)
        _ = realtime_set_current_thread_name(name)
        #else
        Thread.current.name = name
        #endif
        body()
    }
    if let stackSize { thread.stackSize = stackSize }
    thread.start()
}
