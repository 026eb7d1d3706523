// swift-tools-version: 6.2
// A small app on HearthKit, shaped like the light control of the Google Home APIs' iOS sample app: list the lights,
// subscribe to one, toggle it, dim it, and print its connectivity changes. It builds against this repository through
// a path dependency; in your own package, point the dependency at a clone of Hearth instead.
import PackageDescription

let package = Package(
    name: "LightControl",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Hearth", path: "../.."),
    ],
    targets: [
        .executableTarget(name: "light-control", dependencies: [.product(name: "HearthKit", package: "Hearth")]),
    ]
)
