#if canImport(Network)
import Dispatch
import Network
import RealtimeCore

extension RealtimeSession {
    /// Feeds the device's network path to ``RealtimeSession/networkPathChanged(isAvailable:)`` from an
    /// `NWPathMonitor`, until the returned monitor is cancelled. Keep the monitor as long as the session.
    ///
    /// The monitor reports the current path once at start, then every change; a report with a usable
    /// path (even through a new interface) makes a connected session check its link at once.
    public func followNetworkPath(queue: DispatchQueue = DispatchQueue(label: "realtime.network-path"))
        -> NWPathMonitor {
        let monitor = NWPathMonitor()
        monitor.pathUpdateHandler = { [weak self] path in
            self?.networkPathChanged(isAvailable: path.status == .satisfied)
        }
        monitor.start(queue: queue)
        return monitor
    }
}
#endif
