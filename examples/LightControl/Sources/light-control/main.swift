// light-control: what the iOS sample app's light screen does, on a local Hearth hub.
//
//   swift run light-control [--broker HOST:PORT] [--hub ID] [LIGHT-ID] [--follow]
//
// Lists the home's lights, subscribes to one (the given one, else the first dimmable light), toggles it, dims it to
// a quarter over a second, waits until the subscription shows the fade has ended, and prints every connectivity
// change it sees meanwhile. With --follow it goes on printing changes until Ctrl-C.
import HearthKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

var broker = "127.0.0.1:18883"  // scripts/run's broker
var hub: String?
var lightID: String?
var follow = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--broker": broker = arguments.popFirst() ?? broker
    case "--hub": hub = arguments.popFirst()
    case "--follow": follow = true
    default: lightID = argument
    }
}

/// The light's OnOff and LevelControl, whichever light type it has.
func controls(_ device: HomeDevice) -> (onOff: Matter.OnOffTrait?, level: Matter.LevelControlTrait?) {
    if let dimmable = device.types[DimmableLightDeviceType.self] {
        return (dimmable.matterTraits.onOffTrait, dimmable.matterTraits.levelControlTrait)
    }
    let light = device.types[OnOffLightDeviceType.self]
    return (light?.matterTraits.onOffTrait, light?.matterTraits.levelControlTrait)
}

func describe(_ device: HomeDevice) -> String {
    let (onOff, level) = controls(device)
    let state = onOff?.attributes.onOff.map { $0 ? "on" : "off" } ?? "?"
    let brightness = level?.attributes.currentLevel.map { ", level \($0)" } ?? ""
    return "\(device.id) (\(device.name)): \(state)\(brightness), \(device.sourceConnectivity)"
}

do {
    let home = try await Home.connect(broker: broker, hub: hub)
    defer { home.close() }

    // There is no single "light" type: OnOffLight and DimmableLight both are lights.
    let lights = try await home.devices().list().filter {
        $0.types.contains(OnOffLightDeviceType.self) || $0.types.contains(DimmableLightDeviceType.self)
    }
    print("Lights:")
    for light in lights { print("  " + describe(light)) }
    guard let light = lights.first(where: { $0.id == lightID })
        ?? (lightID == nil ? lights.first(where: { $0.types.contains(DimmableLightDeviceType.self) }) ?? lights.first : nil)
    else {
        print(lightID.map { "no light '\($0)' in the home" } ?? "the home has no lights")
        exit(1)
    }

    // Subscribe: every change of the light, with its connectivity changes called out.
    let fadeEnded = AsyncStream.makeStream(of: Void.self)
    let subscription = Task {
        var connectivity = light.sourceConnectivity
        for try await device in home.device(id: light.id) {
            if device.sourceConnectivity != connectivity {
                print("connectivity: \(connectivity) → \(device.sourceConnectivity)")
                connectivity = device.sourceConnectivity
            }
            print("  " + describe(device))
            if let level = controls(device).level?.attributes, level.currentLevel == 64, level.remainingTime == 0 {
                fadeEnded.continuation.yield()
            }
        }
    }

    let (onOff, level) = controls(light)
    if let onOff, onOff.supportsToggleCommand {
        print("toggle")
        try await onOff.toggle()
    }
    if let level {
        print("dim to 64 over 1 s")
        try await level.moveToLevelWithOnOff(level: 64, transitionTime: 10, optionsMask: [], optionsOverride: [])
        var ended = fadeEnded.stream.makeAsyncIterator()
        _ = await ended.next()
    }
    if !follow { subscription.cancel() }
    _ = await subscription.result
} catch let error as HomeError {
    print("error: \(error.code) (\(error.status)): \(error.message)")
    exit(1)
}
