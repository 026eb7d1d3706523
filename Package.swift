// swift-tools-version: 6.2
// Hearth: a local smart-home hub. Dependencies point one way (docs/architecture.md):
// model → engine → adapters (contract, MQTT transport, hardware, configuration) → hub → executables.
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
        // Static, so that `swift build --product HearthKit` builds just it (an automatic library product cannot be
        // built on its own) — and shows that it needs no engine.
        .library(name: "HearthKit", type: .static, targets: ["HearthKit"]),
        .executable(name: "hearth", targets: ["hearth"]),
        .executable(name: "hearthd", targets: ["hearthd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
    ],
    targets: [
        // The one lock every module uses: Synchronization's Mutex, annotated for ThreadSanitizer in its builds.
        .target(name: "HearthSync", swiftSettings: strict),
        // Time as the hub sees it: instants, the clock protocol, the monotonic and the manual clock (engine and
        // hardware).
        .target(name: "HearthClock", dependencies: ["HearthSync"], swiftSettings: strict),
        // The words a client and the hub share: error codes and Matter statuses, connectivity and locality. HearthModel
        // and HearthKit both re-export it, so neither keeps a copy of the other's lists.
        .target(name: "HearthVocabulary", swiftSettings: strict),
        // What a client sees: devices, device types, traits, attribute and command descriptors, errors, connectivity.
        .target(name: "HearthModel", dependencies: ["HearthVocabulary"], swiftSettings: strict),
        // What happens: Matter cluster state machines, transitions on an injected clock, the device registry and its
        // events.
        .target(name: "HearthEngine", dependencies: ["HearthSync", "HearthClock", "HearthModel"],
                swiftSettings: strict),
        // libyaml's C API (YAML 1.1/1.2 parser events), found with pkg-config (Debian: libyaml-dev).
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // The hub configuration and board files: YAML (libyaml, YAML 1.2 core schema) with line and column, secrets,
        // decoded against tables of keys that also give the JSON Schema, with every problem listed.
        .target(name: "HearthConfig", dependencies: ["CYAML", "HearthSync"], swiftSettings: strict),
        // A strict JSON parser and a byte writer (duplicate keys, invalid UTF-8 and depth refused), with no Foundation.
        .target(name: "HearthJSON", swiftSettings: strict),
        // The MQTT contract every client and hub speaks: topics, requests, responses, device documents, value coding.
        .target(name: "HearthContract", dependencies: ["HearthModel", "HearthJSON"], swiftSettings: strict),
        // libmosquitto's C API, found with pkg-config (Debian: libmosquitto-dev).
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // A safe MQTT client over libmosquitto: its own network thread, reconnection, v5 properties, TLS. Transport
        // only.
        .target(name: "HearthMQTT", dependencies: ["HearthSync", "CMosquitto"], swiftSettings: strict),
        // Home Assistant MQTT discovery: the messages that make every device appear in Home Assistant (no MQTT client).
        .target(name: "HearthHomeAssistant",
                dependencies: ["HearthSync", "HearthModel", "HearthEngine", "HearthContract"],
                swiftSettings: strict),
        // libgpiod, v1 or v2, found with pkg-config (Debian: libgpiod-dev): its header and library, for CGPIODShim.
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        // One small C API over whichever libgpiod <gpiod.h> declares (v1 or v2), so HearthLinux has one binding.
        .target(name: "CGPIODShim", dependencies: ["CGPIOD"], cSettings: strictC),
        // Linux I/O under a root prefix: GPIO character device (libgpiod), PWM, IIO and hwmon sysfs; and what the
        // process gives back to the kernel (start-up pages, glibc's heap thresholds).
        .target(name: "HearthLinux", dependencies: ["HearthSync", "CGPIODShim"], swiftSettings: strict),

        // OpenSSL 3's libcrypto, found with pkg-config (Debian: libssl-dev; libssl3 is on every Raspberry Pi OS).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Safe wrappers over libcrypto for what Matter needs: AES-CCM, P-256 (points, scalars, ECDSA, ECDH), SHA-256,
        // HMAC, HKDF, PBKDF2, X.509 and CSRs; every handle owned, every failure a typed `CryptoError`.
        .target(name: "HearthCrypto", dependencies: ["COpenSSL"], swiftSettings: strict),
        // libqrencode's C API, found with pkg-config (Debian: libqrencode-dev): the pairing QR code in terminal text.
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        // A Matter 1.4 node: TLV, messages over UDP with MRP, PASE and CASE, fabrics and certificates, the Interaction
        // Model, the root node's clusters and DNS-SD. It knows nothing of MQTT or of the hub.
        .target(name: "HearthMatter", dependencies: [
            "HearthSync", "HearthClock", "HearthCrypto", "CQREncode",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        ], swiftSettings: strict),
        // The hub's devices as bridged endpoints of a Matter node: clusters from the engine's trait descriptors,
        // values to and from TLV, HomeError as IM status, endpoint numbers kept by device id. A door onto the engine.
        .target(name: "HearthMatterBridge", dependencies: [
            "HearthSync", "HearthModel", "HearthEngine", "HearthMatter", "HearthCrypto",
        ], swiftSettings: strict),

        // The hub service: publishing the engine over MQTT, peer routing, configuration, persistence, and the services
        // a board runs, assembled for `hearthd`.
        .target(name: "HearthHub", dependencies: [
            "HearthSync", "HearthEngine", "HearthContract", "HearthJSON", "HearthMQTT", "HearthHardware",
            "HearthHardwareLinux", "HearthSimulator", "HearthConfig", "HearthLinux", "HearthHomeAssistant",
            "HearthMatter", "HearthCrypto", "HearthMatterBridge",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ], swiftSettings: strict),
        // The hub's own web page and its JSON API, served by hearthd over SwiftNIO's HTTP/1 pipeline (no framework).
        .target(name: "HearthWeb", dependencies: [
            "HearthSync", "HearthHub", "HearthEngine", "HearthContract", "HearthJSON", "HearthModel", "HearthMQTT",
            "HearthCrypto", "HearthConfig", "HearthMatter",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], exclude: ["Page"], swiftSettings: strict),
        // The daemon a board runs: `hearthd run --config FILE`, `hearthd check-config FILE`.
        .executableTarget(name: "hearthd", dependencies: [
            "HearthHub", "HearthWeb", "HearthEngine", "HearthMQTT",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], swiftSettings: strict),
        // The `hearth` command-line client: talks to any hub over MQTT only, through HearthKit's untyped layer.
        .executableTarget(name: "hearth", dependencies: [
            "HearthKit", "HearthContract", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], swiftSettings: strict),

        // The Swift client library: the Google Home APIs' shape over the MQTT contract; typed layer in Generated/.
        .target(name: "HearthKit", dependencies: [
            "HearthSync", "HearthVocabulary", "HearthModel", "HearthJSON", "HearthContract", "HearthMQTT",
        ],
                swiftSettings: strict),
        // Writes HearthKit's typed layer from the engine's trait descriptors and device type catalogue (a build tool).
        .target(name: "HearthKitGenerator", dependencies: ["HearthEngine", "HearthModel", "HearthSimulator"],
                swiftSettings: strict),
        // `hearthkit-generate`: runs the generator into Sources/HearthKit/Generated (or checks it is up to date).
        .executableTarget(name: "hearthkit-generate", dependencies: ["HearthKitGenerator"], swiftSettings: strict),

        // Hardware bindings (relays, wall switches, PWM dimmers, humidity sensors), board files, and the backend
        // protocols they open hardware through, in platform-neutral types and errors (`HardwareError`).
        .target(name: "HearthHardware", dependencies: ["HearthSync", "HearthClock", "HearthEngine", "HearthConfig"],
                swiftSettings: strict),
        // The Linux backend of HearthHardware (`LinuxHardware`): GPIO, PWM and sensors through HearthLinux.
        .target(name: "HearthHardwareLinux",
                dependencies: ["HearthSync", "HearthClock", "HearthHardware", "HearthLinux"],
                swiftSettings: strict),
        // A board in memory (`SimulatedHardware`): lines, PWM, drifting sensors and the simulated-switch trait.
        .target(name: "HearthSimulator", dependencies: ["HearthSync", "HearthHardware", "HearthEngine"],
                swiftSettings: strict),

        // Benchmarks of the engine (run by scripts/bench, never by tests).
        .executableTarget(name: "HearthBench", dependencies: [
            "HearthEngine", "HearthContract", "HearthHub", "HearthJSON", "HearthConfig", "HearthHardware",
            "HearthHardwareLinux", "HearthLinux", "HearthModel", "HearthMQTT",
            .product(name: "Logging", package: "swift-log"),
        ], path: "Benchmarks/HearthBench", swiftSettings: strict),

        // Fixtures shared by the test suites: a private mosquitto on a free loopback port, temporary sysfs trees.
        .target(name: "HearthTestKit", dependencies: ["HearthSync", "HearthEngine", "HearthMQTT", "HearthLinux"],
                path: "Tests/HearthTestKit", swiftSettings: strict),

        // Fuzz targets: one function per reader of outside input (JSON, requests, topics, configuration, boards, peers,
        // the state file, certificates, points and signatures, Matter TLV and message headers) that checks the reader's
        // promises on any bytes (scripts/fuzz, docs/reliability.md).
        .target(name: "HearthFuzzing", dependencies: [
            "HearthSync", "HearthJSON", "HearthContract", "HearthModel", "HearthEngine", "HearthConfig",
            "HearthHardware", "HearthSimulator", "HearthMQTT", "HearthHub", "HearthWeb", "HearthCrypto", "HearthMatter",
            "HearthMatterBridge",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // `hearth-fuzz`: HearthFuzzing's targets under libFuzzer when scripts/fuzz builds it, an input replayer
        // otherwise.
        .executableTarget(name: "hearth-fuzz", dependencies: ["HearthFuzzing"], swiftSettings: strict),

        // Benchmarks of a running hub against a private broker (run by scripts/bench, never by tests).
        .executableTarget(name: "HubBench", dependencies: ["HearthMQTT"], path: "Benchmarks/HubBench",
                          swiftSettings: strict),

        .testTarget(name: "HearthModelTests", dependencies: ["HearthModel"], swiftSettings: strict),
        .testTarget(name: "HearthEngineTests", dependencies: ["HearthSync", "HearthEngine", "HearthTestKit"],
                    swiftSettings: strict),
        .testTarget(name: "HearthConfigTests", dependencies: ["HearthConfig"], swiftSettings: strict),
        .testTarget(name: "HearthJSONTests", dependencies: ["HearthJSON"], swiftSettings: strict),
        .testTarget(name: "HearthContractTests", dependencies: ["HearthContract", "HearthEngine"],
                    swiftSettings: strict),
        .testTarget(name: "HearthMQTTTests", dependencies: ["HearthMQTT", "HearthTestKit"], swiftSettings: strict),
        .testTarget(name: "HearthCLITests", dependencies: [
            "HearthSync", "HearthContract", "HearthJSON", "HearthHub", "HearthTestKit",
        ], swiftSettings: strict),
        .testTarget(name: "HearthHardwareTests", dependencies: [
            "HearthSync", "HearthHardware", "HearthHardwareLinux", "HearthSimulator", "HearthTestKit",
        ], swiftSettings: strict),
        .testTarget(name: "HearthHubTests", dependencies: [
            "HearthSync", "HearthHub", "HearthContract", "HearthJSON", "HearthMQTT", "HearthHardware",
            "HearthHardwareLinux", "HearthSimulator", "HearthTestKit", "HearthHomeAssistant", "HearthMatter",
            "HearthMatterBridge",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
        ], swiftSettings: strict),
        .testTarget(name: "HearthHomeAssistantTests", dependencies: [
            "HearthSync", "HearthHomeAssistant", "HearthEngine", "HearthTestKit",
        ], swiftSettings: strict),
        // HearthKit as an app uses it: only `import HearthKit`, against real hearthd processes (HearthTestKit).
        .testTarget(name: "HearthKitTests", dependencies: ["HearthKit", "HearthTestKit"], swiftSettings: strict),
        .testTarget(name: "HearthKitGeneratorTests",
                    dependencies: ["HearthKitGenerator", "HearthModel", "HearthTestKit"], swiftSettings: strict),
        // The fuzz corpus (Tests/Fuzz/corpus) replayed through HearthFuzzing's targets, and the regressions it found.
        .testTarget(name: "HearthFuzzingTests", dependencies: ["HearthFuzzing", "HearthTestKit"],
                    swiftSettings: strict),
        // The web page's server over real HTTP on 127.0.0.1 against real hearthd processes.
        .testTarget(name: "HearthWebTests", dependencies: [
            "HearthWeb", "HearthJSON", "HearthTestKit", "HearthSync", "HearthMQTT", "HearthHub", "HearthMatter",
            "HearthModel", .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ], swiftSettings: strict),
        // Vectors/: published test certificates, read from the checkout by path.
        .testTarget(name: "HearthCryptoTests", dependencies: ["HearthCrypto", "COpenSSL", "HearthTestKit"],
                    exclude: ["Vectors"], swiftSettings: strict),
        .testTarget(name: "HearthMatterTests", dependencies: [
            "HearthMatter", "HearthCrypto", "HearthTestKit", "HearthSync",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        ], swiftSettings: strict),
        .testTarget(name: "HearthMatterBridgeTests", dependencies: [
            "HearthMatterBridge", "HearthMatter", "HearthEngine", "HearthModel", "HearthSync", "HearthTestKit",
        ], swiftSettings: strict),
        .testTarget(name: "HearthLinuxTests", dependencies: ["HearthSync", "HearthLinux", "HearthTestKit"],
                    swiftSettings: strict),
    ]
)
