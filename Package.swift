// swift-tools-version: 6.0
import Foundation
import PackageDescription

/// `REALTIME_FUZZ=1` adds the libFuzzer executable; it has no `main` of its own (libFuzzer's comes with
/// `--sanitize=fuzzer`), so an ordinary build must not see it. Tests/Fixtures/fuzz/run.sh sets it.
let fuzzing = ProcessInfo.processInfo.environment["REALTIME_FUZZ"] == "1"

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
        .library(name: "RealtimePusherTesting", targets: ["RealtimePusherTesting"]),
        .library(name: "RealtimeSocketIOTesting", targets: ["RealtimeSocketIOTesting"]),
        .library(name: "RealtimeActionCableTesting", targets: ["RealtimeActionCableTesting"]),
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
        // epoll, eventfd and prctl for the POSIX event loop (Linux only; Apple builds never see it).
        .systemLibrary(name: "CRealtimeLinux"),
        // AES-GCM opening with VAES/VPCLMULQDQ for the TLS 1.3 direct reader (x86-64; a stub elsewhere).
        .target(name: "CRealtimeAEAD"),
        // The system zlib for permessage-deflate, on every platform (Apple's SDKs ship libz).
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        .target(
            name: "RealtimeWebSocket",
            dependencies: [
                "RealtimeCore",
                "CZlib",
                .target(name: "COpenSSL", condition: .when(platforms: [.linux, .android])),
                .target(name: "CRealtimeAEAD", condition: .when(platforms: [.linux, .android])),
                .target(name: "CRealtimeLinux", condition: .when(platforms: [.linux, .android])),
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
        // Test kits: the dialect-neutral one, then one per dialect, so an app links only what it tests.
        .target(name: "RealtimeTesting", dependencies: ["RealtimeCore", "RealtimeWebSocket"],
                swiftSettings: strictSettings),
        .target(name: "RealtimePusherTesting",
                dependencies: ["RealtimeTesting", "RealtimeCore", "RealtimeWebSocket", "RealtimePusher"],
                swiftSettings: strictSettings),
        .target(name: "RealtimeSocketIOTesting",
                dependencies: ["RealtimeTesting", "RealtimeCore", "RealtimeWebSocket", "RealtimeSocketIO"],
                swiftSettings: strictSettings),
        // The Action Cable server speaks the wire format itself; it needs no client code.
        .target(name: "RealtimeActionCableTesting",
                dependencies: ["RealtimeTesting", "RealtimeCore", "RealtimeWebSocket"],
                swiftSettings: strictSettings),
        .executableTarget(name: "realtime",
                          dependencies: ["Realtime", "RealtimeTesting", "RealtimePusherTesting",
                                         "RealtimeSocketIOTesting", "RealtimeActionCableTesting"],
                          swiftSettings: strictSettings),
        .executableTarget(name: "realtime-bench",
                          dependencies: ["Realtime", "RealtimeTesting", "CBenchAllocationCounter",
                                         .target(name: "CRealtimeAEAD", condition: .when(platforms: [.linux, .android])),
                                         .target(name: "CRealtimeLinux", condition: .when(platforms: [.linux, .android]))],
                          swiftSettings: strictSettings),
        // Counts the bench process's heap allocations (it defines malloc and its kin; glibc only).
        .target(name: "CBenchAllocationCounter"),
        .executableTarget(name: "AutobahnTestee", dependencies: ["RealtimeWebSocket"],
                          swiftSettings: strictSettings),
        // The fuzz properties, shared by the libFuzzer executable and the corpus-replay tests.
        .target(
            name: "RealtimeFuzzing",
            dependencies: ["RealtimeCore", "RealtimeWebSocket", "RealtimeSocketIO", "RealtimePusher",
                           "RealtimeActionCable",
                           .target(name: "COpenSSL", condition: .when(platforms: [.linux, .android]))],
            swiftSettings: strictSettings
        ),

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
        .testTarget(name: "RealtimeActionCableTests",
                    dependencies: ["RealtimeActionCable", "RealtimeTesting", "RealtimeActionCableTesting"],
                    swiftSettings: strictSettings),
        .testTarget(name: "RealtimeFuzzingTests", dependencies: ["RealtimeFuzzing", "RealtimeCore"],
                    swiftSettings: strictSettings),
        .testTarget(name: "IntegrationTests",
                    dependencies: ["Realtime", "RealtimeTesting", "RealtimePusherTesting", "RealtimeSocketIOTesting",
                                   "RealtimeActionCableTesting"],
                    swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)

if fuzzing {
    package.products.append(.executable(name: "realtime-fuzz", targets: ["realtime-fuzz"]))
    package.targets.append(.executableTarget(
        name: "realtime-fuzz", dependencies: ["RealtimeFuzzing"], path: "Tests/Fixtures/fuzz/Entry",
        swiftSettings: strictSettings + [.unsafeFlags(["-parse-as-library"])]))
}
