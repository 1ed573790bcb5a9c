import Foundation

/// Whether a missing test peer fails the run instead of disabling its suite.
///
/// `Tests/run-all` (and so CI) provisions every peer and sets `REALTIME_REQUIRE_PEERS=1`, so a peer that is
/// missing there shows up as failing tests, never as quietly skipped ones.
enum PeerRequirement {
    static var required: Bool { ProcessInfo.processInfo.environment["REALTIME_REQUIRE_PEERS"] == "1" }
}
