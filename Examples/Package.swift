// swift-tools-version: 6.0
import PackageDescription

// Examples live in their own package so the library's package stays free of demo targets.
let package = Package(
    name: "RealtimeExamples",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(name: "Realtime", path: "..")],
    targets: [
        .executableTarget(
            name: "ChatClient",
            dependencies: [.product(name: "Realtime", package: "Realtime")]
        ),
        // The README's Pusher and Bird samples, line for line: built here so they keep compiling.
        .executableTarget(
            name: "PusherPresence",
            dependencies: [.product(name: "Realtime", package: "Realtime")]
        ),
        .executableTarget(
            name: "BirdSignIn",
            dependencies: [.product(name: "Realtime", package: "Realtime")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
