// swift-tools-version: 6.0
import PackageDescription

/// The library's own compiler settings, so the examples read as the library expects code to be written.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]
let realtime = Target.Dependency.product(name: "Realtime", package: "Realtime")
let realtimeTesting = Target.Dependency.product(name: "RealtimeTesting", package: "Realtime")
// One test kit per dialect, so each example links the embedded server it starts and no other.
let pusherTesting = Target.Dependency.product(name: "RealtimePusherTesting", package: "Realtime")
let socketIOTesting = Target.Dependency.product(name: "RealtimeSocketIOTesting", package: "Realtime")
let actionCableTesting = Target.Dependency.product(name: "RealtimeActionCableTesting", package: "Realtime")

// Examples live in their own package so the library's package stays free of demo targets. The runnable ones
// start the embedded servers of the test kits on loopback, check what they received and exit 0 when it is
// right; Tests/Fixtures/examples/smoke.sh runs every one of them.
let package = Package(
    name: "RealtimeExamples",
    // Observation (the view model) needs macOS 14 / iOS 17.
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(name: "Realtime", path: "..")],
    targets: [
        // The chat app's code, written once for every backend: its handlers and how it posts a message.
        .target(name: "ChatKit", dependencies: [realtime], swiftSettings: strictSettings),
        // ChatKit against the embedded Socket.IO, Pusher, Bird and Action Cable servers, two users each.
        .executableTarget(name: "FourBackendChat",
                          dependencies: ["ChatKit", realtime, realtimeTesting, pusherTesting, socketIOTesting,
                                         actionCableTesting],
                          swiftSettings: strictSettings),
        // Typed payloads: Codable values sent, requested and decoded (Socket.IO).
        .executableTarget(name: "CodableMessages", dependencies: [realtime, realtimeTesting, socketIOTesting],
                          swiftSettings: strictSettings),
        // Events, states and errors as async sequences (Action Cable).
        .executableTarget(name: "EventStreams", dependencies: [realtime, realtimeTesting, actionCableTesting],
                          swiftSettings: strictSettings),
        // A presence roster: who is here, kept up to date (Pusher).
        .executableTarget(name: "PresenceRoster", dependencies: [realtime, realtimeTesting, pusherTesting],
                          swiftSettings: strictSettings),
        // A SwiftUI view model over ChatKit; the view itself is built only where SwiftUI exists.
        .target(name: "ChatViewModel", dependencies: ["ChatKit", realtime], swiftSettings: strictSettings),
        // A line-based client for a real Socket.IO or Action Cable server.
        .executableTarget(name: "ChatClient", dependencies: [realtime], swiftSettings: strictSettings),
        // The README's Pusher and Bird samples, line for line: built here so they keep compiling.
        .executableTarget(name: "PusherPresence", dependencies: [realtime]),
        .executableTarget(name: "BirdSignIn", dependencies: [realtime]),
    ],
    swiftLanguageModes: [.v6]
)
