// swift-tools-version: 6.2
// Hearth: a local smart-home hub. Dependencies point one way:
// model → engine → hardware / MQTT adapters → executables.
import PackageDescription

/// Every target of ours: Swift 6 mode (the tools default), strict concurrency, and no warnings.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
]
/// The same for our C: every common warning, as errors.
let strictC: [CSetting] = [
    .enableWarning("all"),
    .enableWarning("extra"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HearthModel", targets: ["HearthModel"]),
        .library(name: "HearthEngine", targets: ["HearthEngine"]),
        .executable(name: "hearth", targets: ["hearth"]),
        .executable(name: "hearthd", targets: ["hearthd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    ],
    targets: [
        // What a client sees: devices, device types, traits, attribute and command descriptors, errors, connectivity.
        .target(name: "HearthModel", swiftSettings: strict),
        // What happens: Matter cluster state machines, transitions on an injected clock, the device registry and its events.
        .target(name: "HearthEngine", dependencies: ["HearthModel"], swiftSettings: strict),
        // The hub configuration and board files: a YAML subset parsed with line numbers, decoded with every problem listed.
        .target(name: "HearthConfig", swiftSettings: strict),
        // libmosquitto's C API, found with pkg-config (Debian: libmosquitto-dev).
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // A safe wrapper over libmosquitto and the MQTT topic contract that publishes the engine's devices.
        .target(name: "HearthMQTT", dependencies: ["CMosquitto", "HearthEngine"], swiftSettings: strict),
        // libgpiod, v1 or v2, found with pkg-config (Debian: libgpiod-dev): its header and library, for CGPIODShim.
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        // One small C API over whichever libgpiod <gpiod.h> declares (v1 or v2), so HearthLinux has one binding.
        .target(name: "CGPIODShim", dependencies: ["CGPIOD"], cSettings: strictC),
        // Linux I/O under a root prefix: GPIO character device (libgpiod), PWM, IIO and hwmon sysfs.
        .target(name: "HearthLinux", dependencies: ["CGPIODShim"], swiftSettings: strict),

        // The hub service: configuration, persistence, and the services a board runs, assembled for `hearthd`.
        .target(name: "HearthHub", dependencies: [
            "HearthEngine", "HearthMQTT", "HearthHardware", "HearthConfig", "HearthLinux",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ], swiftSettings: strict),
        // The daemon a board runs: `hearthd run --config FILE`, `hearthd check-config FILE`.
        .executableTarget(name: "hearthd", dependencies: [
            "HearthHub", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], swiftSettings: strict),
        // The `hearth` command-line client: talks to any hub over MQTT only.
        .executableTarget(name: "hearth", dependencies: [
            "HearthMQTT", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], swiftSettings: strict),

        // Hardware bindings (relays, wall switches, PWM dimmers, humidity sensors) and board files, over HearthLinux
        // or a simulated backend.
        .target(name: "HearthHardware", dependencies: ["HearthEngine", "HearthLinux", "HearthConfig"],
                swiftSettings: strict),

        // Benchmarks of the engine (run by scripts/bench, never by tests).
        .executableTarget(name: "HearthBench", dependencies: ["HearthEngine", "HearthMQTT"], path: "Benchmarks/HearthBench",
                          swiftSettings: strict),

        // Fixtures shared by the test suites: a private mosquitto on a free loopback port, temporary sysfs trees.
        .target(name: "HearthTestKit", path: "Tests/HearthTestKit", swiftSettings: strict),

        // Benchmarks of a running hub against a private broker (run by scripts/bench, never by tests).
        .executableTarget(name: "HubBench", dependencies: ["HearthMQTT"], path: "Benchmarks/HubBench",
                          swiftSettings: strict),

        .testTarget(name: "HearthModelTests", dependencies: ["HearthModel"], swiftSettings: strict),
        .testTarget(name: "HearthEngineTests", dependencies: ["HearthEngine"], swiftSettings: strict),
        .testTarget(name: "HearthConfigTests", dependencies: ["HearthConfig"], swiftSettings: strict),
        .testTarget(name: "HearthMQTTTests", dependencies: ["HearthMQTT", "HearthTestKit"], swiftSettings: strict),
        .testTarget(name: "HearthCLITests", dependencies: ["HearthMQTT", "HearthEngine", "HearthTestKit"], swiftSettings: strict),
        .testTarget(name: "HearthHardwareTests", dependencies: ["HearthHardware", "HearthTestKit"],
                    swiftSettings: strict),
        .testTarget(name: "HearthHubTests", dependencies: [
            "HearthHub", "HearthMQTT", "HearthTestKit", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .testTarget(name: "HearthLinuxTests", dependencies: ["HearthLinux", "HearthTestKit"], swiftSettings: strict),
    ]
)
