import Foundation
#if canImport(CRealtimeLinux)
import CRealtimeLinux  // thread naming (see its shim.h)
#endif

/// Starts a thread named `name` (at most 15 bytes are kept on Linux) that runs `body`, on the platform's
/// default stack.
func startNamedThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        setCurrentThreadName(name)
        body()
    }
    thread.start()
}

/// Renames the calling thread (at most 15 bytes are kept on Linux), as when it takes on another role.
func setCurrentThreadName(_ name: String) {
    #if os(Linux) || os(Android)
    _ = realtime_set_current_thread_name(name)
    #else
    Thread.current.name = name
    #endif
}
