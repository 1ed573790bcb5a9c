// swift-tools-version: 6.0
import PackageDescription

/// Compiler settings shared by every Swift target.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Realtime",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "Realtime", targets: ["Realtime"]),
        .library(name: "RealtimeCore", targets: ["RealtimeCore"]),
        .library(name: "RealtimeWebSocket", targets: ["RealtimeWebSocket"]),
        .library(name: "RealtimePusher", targets: ["RealtimePusher"]),
        .library(name: "RealtimeSocketIO", targets: ["RealtimeSocketIO"]),
        .library(name: "RealtimeActionCable", targets: ["RealtimeActionCable"]),
        .library(name: "RealtimeTesting", targets: ["RealtimeTesting"]),
        .executable(name: "realtime", targets: ["realtime"]),
        .executable(name: "realtime-bench", targets: ["realtime-bench"]),
        .executable(name: "AutobahnTestee", targets: ["AutobahnTestee"]),
    ],
    dependencies: [],
    targets: [
        // Foundations
        .target(name: "RealtimeCore", swiftSettings: strictSettings),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // AES-GCM opening with VAES/VPCLMULQDQ for the TLS 1.3 direct reader (x86-64; a stub elsewhere).
        .target(name: "CRealtimeAEAD"),
        .target(
            name: "RealtimeWebSocket",
            dependencies: [
                "RealtimeCore",
                .target(name: "COpenSSL", condition: .when(platforms: [.linux, .android])),
                .target(name: "CRealtimeAEAD", condition: .when(platforms: [.linux, .android])),
            ],
            swiftSettings: strictSettings
        ),

        // Dialects: each imports RealtimeCore only.
        .target(name: "RealtimeSocketIO", dependencies: ["RealtimeCore"], path: "Adapters/SocketIO",
                swiftSettings: strictSettings),
        .target(name: "RealtimePusher", dependencies: ["RealtimeCore"], path: "Adapters/Pusher",
                swiftSettings: strictSettings),
        .target(name: "RealtimeActionCable", dependencies: ["RealtimeCore"], path: "Adapters/ActionCable",
                swiftSettings: strictSettings),

        // Umbrella and tools
        .target(
            name: "Realtime",
            dependencies: ["RealtimeCore", "RealtimeWebSocket", "RealtimeSocketIO", "RealtimePusher",
                           "RealtimeActionCable"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "RealtimeTesting",
            dependencies: ["RealtimeCore", "RealtimeWebSocket", "RealtimeSocketIO", "RealtimePusher",
                           "RealtimeActionCable"],
            swiftSettings: strictSettings
        ),
        .executableTarget(name: "realtime", dependencies: ["Realtime", "RealtimeTesting"],
                          swiftSettings: strictSettings),
        .executableTarget(name: "realtime-bench",
                          dependencies: ["Realtime", "RealtimeTesting",
                                         .target(name: "CRealtimeAEAD", condition: .when(platforms: [.linux, .android]))],
                          swiftSettings: strictSettings),
        .executableTarget(name: "AutobahnTestee", dependencies: ["RealtimeWebSocket"],
                          swiftSettings: strictSettings),

        // Tests
        .testTarget(name: "RealtimeCoreTests", dependencies: ["RealtimeCore", "RealtimeTesting"],
                    swiftSettings: strictSettings),
        .testTarget(name: "RealtimeWebSocketTests",
                    dependencies: ["RealtimeWebSocket", "RealtimeTesting",
                                   .target(name: "CRealtimeAEAD", condition: .when(platforms: [.linux, .android]))],
                    swiftSettings: strictSettings),
        .testTarget(name: "RealtimeSocketIOTests", dependencies: ["RealtimeSocketIO", "RealtimeTesting"],
                    swiftSettings: strictSettings),
        .testTarget(name: "RealtimePusherTests", dependencies: ["RealtimePusher", "RealtimeTesting"],
                    swiftSettings: strictSettings),
        .testTarget(name: "RealtimeActionCableTests", dependencies: ["RealtimeActionCable", "RealtimeTesting"],
                    swiftSettings: strictSettings),
        .testTarget(name: "IntegrationTests", dependencies: ["Realtime", "RealtimeTesting"],
                    swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)
