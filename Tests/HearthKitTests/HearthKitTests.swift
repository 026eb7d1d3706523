// HearthKit against real hubs: `hearthd` on the simulated board, a real mosquitto, and nothing but `import HearthKit`
// on the client side. Every wait is on a condition (a stream's element), bounded by the test's time limit.
import Foundation
import HearthKit
import HearthTestKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct HearthKitTests {
    @Test(.timeLimit(.minutes(1)))
    func listingTypesTraitsAndAttributes() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        let home = try await rig.home(waitingFor: sampleIDs)
        defer { home.close() }

        let devices = try await home.devices().list()
        #expect(devices.map(\.id) == sampleIDs)
        let lights = devices.filter {
            $0.types.contains(OnOffLightDeviceType.self) || $0.types.contains(DimmableLightDeviceType.self)
        }
        #expect(lights.map(\.id) == ["porch-light", "kitchen-lamp"])

        let lamp = try #require(devices.first { $0.id == "kitchen-lamp" })
        #expect(
            lamp.name == "Kitchen lamp" && lamp.roomID == "kitchen" && lamp.structureID == nil && !lamp.isMatterDevice)
        #expect(lamp.hub == "sim")
        #expect(lamp.sourceConnectivity == SourceConnectivity(connectivityState: .online, dataSourceLocality: .direct))
        let dimmable = try #require(await lamp.types.get(DimmableLightDeviceType.self))
        #expect(dimmable.metadata.isPrimaryType)
        #expect(dimmable.metadata.sourceConnectivity.connectivityState == .online)
        #expect(dimmable.traits.contains(Matter.LevelControlTrait.self))
        #expect(!dimmable.traits.contains(Matter.SwitchTrait.self))
        let level = try #require(dimmable.matterTraits.levelControlTrait)
        #expect(level.attributes.currentLevel == 254)
        #expect(level.attributes.onOffTransitionTime == 5)
        #expect(level.attributes.options == [])
        #expect(level.metadata.sourceConnectivity.dataSourceLocality == .direct)
        let info = try #require(dimmable.matterTraits.basicInformationTrait)
        #expect(info.attributes.vendorName == "Hearth" && info.attributes.productName == "Simulated dimmer")

        // A type the device does not have: nil, not an error.
        #expect(await lamp.types.get(OnOffPlugInUnitDeviceType.self) == nil)
        #expect(!lamp.types.contains(GenericSwitchDeviceType.self))
        #expect(lamp.types[DimmableLightDeviceType.self] == dimmable)

        // Not supported vs a real null.
        #expect(
            level.attributes.onLevel == nil && level.attributes.$onLevel.isSupported
                && level.attributes.$onLevel.isNullable)
        let fan = try #require(
            devices.first { $0.id == "fan" }?.types[OnOffPlugInUnitDeviceType.self]?.matterTraits.onOffTrait)
        #expect(fan.attributes.onTime == nil && !fan.attributes.$onTime.isSupported)
        #expect(fan.attributes.onOff == false && fan.attributes.$onOff.isSupported && !fan.attributes.$onOff.isNullable)
        let porch = try #require(
            devices.first { $0.id == "porch-light" }?.types[OnOffLightDeviceType.self]?.matterTraits.onOffTrait)
        #expect(porch.attributes.startUpOnOff == nil && porch.attributes.$startUpOnOff.isSupported)

        // Two types on one device, each with its own traits.
        let climate = try #require(devices.first { $0.id == "bathroom-climate" })
        #expect(climate.types.count == 2)
        #expect(climate.types[HumiditySensorDeviceType.self]?.metadata.isPrimaryType == true)
        #expect(climate.types[TemperatureSensorDeviceType.self]?.metadata.isPrimaryType == false)
        let humidity = try #require(
            climate.types[HumiditySensorDeviceType.self]?.matterTraits.relativeHumidityMeasurementTrait)
        #expect(humidity.attributes.$measuredValue.isNullable)

        // The maker's trait of the simulated board, under its package's namespace.
        let hall = try #require(devices.first { $0.id == "hall-switch" }?.types[GenericSwitchDeviceType.self])
        let simulated = try #require(hall.traits[DevHearth.SimulatedSwitchTrait.self])
        #expect(simulated.supportsPressCommand && simulated.metadata.sourceConnectivity.connectivityState == .online)
        #expect(hall.dynamic.typed is GenericSwitchDeviceType)
    }

    @Test(.timeLimit(.minutes(1)))
    func anOffOnlySwitchSupportsOnlyOff() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        let home = try await rig.home(waitingFor: ["fan"])
        defer { home.close() }
        let fan = try #require(try await home.devices().list().first { $0.id == "fan" }?
            .types[OnOffPlugInUnitDeviceType.self]?.matterTraits.onOffTrait)
        #expect(fan.supportsOffCommand)
        #expect(!fan.supportsToggleCommand && !fan.supportsOnCommand && !fan.supportsOffWithEffectCommand)
        let refused = await HomeError.from { try await fan.toggle() }
        #expect(
            refused?.code == .unimplemented && refused?.status == .unsupportedCommand, "\(String(describing: refused))")
        try await fan.off()
    }

    /// The tunable-white strip's typed ColorControl, against a real hearthd on the simulated board.
    @Test(.timeLimit(.minutes(1)))
    func aColorTemperatureLightsTypedColorControl() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: """
              - id: desk-strip
                type: ColorTemperatureLight
                binding: {kind: cctDimmer, warm: cct-warm, cold: cct-cold, warmMireds: 400, coldMireds: 160}
            """)
        let home = try await rig.home(waitingFor: ["desk-strip"])
        defer { home.close() }
        func strip() async throws -> ColorTemperatureLightDeviceType {
            try #require(
                await home.devices().list().first { $0.id == "desk-strip" }?.types[ColorTemperatureLightDeviceType.self]
            )
        }
        let color = try #require(try await strip().matterTraits.colorControlTrait)
        #expect(color.attributes.colorTempPhysicalMinMireds == 160)
        #expect(color.attributes.colorTempPhysicalMaxMireds == 400)
        #expect(color.attributes.colorMode == .colorTemperatureMireds)
        #expect(color.attributes.colorCapabilities == .colorTemperature)
        try await #require(try await strip().matterTraits.onOffTrait).on()
        try await color.moveToColorTemperature(colorTemperatureMireds: 300)
        #expect(try await strip().matterTraits.colorControlTrait?.attributes.colorTemperatureMireds == 300)
        try await color.stepColorTemperature(stepMode: .up, stepSize: 500)
        #expect(try await strip().matterTraits.colorControlTrait?.attributes.colorTemperatureMireds == 400)
        try await color.moveColorTemperature(moveMode: .down, rate: 1000, colorTemperatureMinimumMireds: 200)
        try await color.stopMoveStep()
        _ = try await color.update { $0.setStartUpColorTemperatureMireds(250) }
        #expect(try await strip().matterTraits.colorControlTrait?.attributes.startUpColorTemperatureMireds == 250)
        let refused = await HomeError.from { try await color.moveColorTemperature(moveMode: .up, rate: 0) }
        #expect(refused?.status == .invalidCommand, "\(String(describing: refused))")
    }

    @Test(.timeLimit(.minutes(1)))
    func everyCommandWithItsParameters() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        let home = try await rig.home(waitingFor: sampleIDs)
        defer { home.close() }
        func lamp() async throws -> DimmableLightDeviceType {
            try #require(
                await home.devices().list().first { $0.id == "kitchen-lamp" }?.types[DimmableLightDeviceType.self])
        }
        var onOff = try #require(try await lamp().matterTraits.onOffTrait)
        var level = try #require(try await lamp().matterTraits.levelControlTrait)

        // LevelControl: each command, its fields by name, enums and bitmaps typed. The state is published before the
        // answer, so the home shows it as soon as a command returns.
        try await level.moveToLevelWithOnOff(level: 200, transitionTime: 0, optionsMask: [], optionsOverride: [])
        level = try #require(try await lamp().matterTraits.levelControlTrait)
        #expect(level.attributes.currentLevel == 200)
        #expect(try await lamp().matterTraits.onOffTrait?.attributes.onOff == true)
        try await level.moveToLevel(level: 127, transitionTime: 0, optionsMask: [], optionsOverride: [])
        #expect(try await lamp().matterTraits.levelControlTrait?.attributes.currentLevel == 127)
        try await level.step(stepMode: .down, stepSize: 27, transitionTime: 0)
        #expect(try await lamp().matterTraits.levelControlTrait?.attributes.currentLevel == 100)
        try await level.stepWithOnOff(stepMode: .up, stepSize: 10, transitionTime: nil)
        #expect(try await lamp().matterTraits.levelControlTrait?.attributes.currentLevel == 110)
        try await level.move(moveMode: .up, rate: 100)
        try await level.stop()
        try await level.moveWithOnOff(moveMode: .down, rate: nil)
        try await level.stopWithOnOff(optionsMask: [.executeIfOff], optionsOverride: [.executeIfOff])
        #expect(try await lamp().matterTraits.levelControlTrait?.attributes.remainingTime == 0)

        // OnOff: the effects and the timed on.
        try await onOff.on()
        try await onOff.offWithEffect(effectIdentifier: .dyingLight, effectVariant: 0)
        onOff = try #require(try await lamp().matterTraits.onOffTrait)
        #expect(onOff.attributes.onOff == false && onOff.attributes.globalSceneControl == false)
        try await onOff.onWithRecallGlobalScene()
        #expect(try await lamp().matterTraits.onOffTrait?.attributes.globalSceneControl == true)
        try await onOff.off()
        try await onOff.onWithTimedOff(onOffControl: [], onTime: 600, offWaitTime: 20)
        onOff = try #require(try await lamp().matterTraits.onOffTrait)
        #expect(onOff.attributes.onOff == true && (onOff.attributes.onTime ?? 0) > 0)
        try await onOff.onWithTimedOff(onOffControl: [.acceptOnlyWhenOn], onTime: 10, offWaitTime: 0)
        try await onOff.toggle()
        #expect(try await lamp().matterTraits.onOffTrait?.attributes.onOff == false)
        try await onOff.on()
        #expect(try await lamp().matterTraits.onOffTrait?.attributes.onOff == true)

        // Identify: the field is the Matter one.
        let identify = try #require(try await lamp().matterTraits.identifyTrait)
        try await identify.identify(identifyTime: 3)
        #expect((try await lamp().matterTraits.identifyTrait?.attributes.identifyTime ?? 0) > 0)
        try await identify.identify(identifyTime: 0)

        // The hub's refusal is a HomeError with both vocabularies.
        let refused = await HomeError.from { try await level.moveWithOnOff(moveMode: .up, rate: 0) }
        #expect(
            refused?.code == .invalidArgument && refused?.status == .invalidCommand, "\(String(describing: refused))")
    }

    @Test(.timeLimit(.minutes(1)))
    func writableAttributesAreUpdatedAndARefusedValueChangesNothing() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        let home = try await rig.home(waitingFor: ["kitchen-lamp", "porch-light"])
        defer { home.close() }
        let devices = try await home.devices().list()
        let level = try #require(devices.first { $0.id == "kitchen-lamp" }?.types[DimmableLightDeviceType.self]?
            .matterTraits.levelControlTrait)
        #expect(level.attributes.$onLevel.isWritable && !level.attributes.$currentLevel.isWritable)

        let updated = try await level.update {
            $0.setOnLevel(100)
            $0.setOptions([.executeIfOff])
        }
        #expect(updated.attributes.onLevel == 100 && updated.attributes.options == [.executeIfOff])
        let porch = try #require(
            devices.first { $0.id == "porch-light" }?.types[OnOffLightDeviceType.self]?.matterTraits.onOffTrait)
        let toggled = try await porch.update { $0.setStartUpOnOff(.toggle) }
        #expect(toggled.attributes.startUpOnOff == .toggle)
        #expect(try await porch.update { $0.setStartUpOnOff(nil) }.attributes.startUpOnOff == nil)

        // All or nothing: one value out of range refuses the whole write.
        let refused = await HomeError.from {
            try await level.update {
                $0.setOnLevel(50)
                $0.setOnTransitionTime(0xFFFF)
            }
        }
        #expect(
            refused?.code == .invalidArgument && refused?.status == .constraintError, "\(String(describing: refused))")
        #expect(refused?.message.contains("onTransitionTime") == true, "\(String(describing: refused))")
        let after = try #require(try await home.devices().list().first { $0.id == "kitchen-lamp" }?
            .types[DimmableLightDeviceType.self]?.matterTraits.levelControlTrait)
        #expect(after.attributes.onLevel == 100 && after.attributes.onTransitionTime == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func aNameIsCutAtSixtyCodePoints() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        let home = try await rig.home(waitingFor: ["porch-light"])
        defer { home.close() }
        let porch = try #require(try await home.devices().list().first { $0.id == "porch-light" })
        let renamed = try await porch.setName(String(repeating: "🏠", count: 70))
        #expect(renamed.name == String(repeating: "🏠", count: 60))
        #expect(porch.name == "Porch light")
        #expect(try await home.devices().list().first { $0.id == "porch-light" }?.name == renamed.name)
        let moved = try await renamed.setRoom("garden")
        #expect(moved.roomID == "garden" && moved.name == renamed.name)
        #expect(try await moved.setRoom(nil).roomID == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func aStreamSeesAWallSwitchPressAndAFade() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        let home = try await rig.home(waitingFor: ["kitchen-lamp", "hall-switch"])
        defer { home.close() }
        let changes = home.devices().stream()
        let devices = try await home.devices().list()
        let press = try #require(devices.first { $0.id == "hall-switch" }?.types[GenericSwitchDeviceType.self]?
            .traits[DevHearth.SimulatedSwitchTrait.self])

        // The press runs through the real debounce; the switch's binding toggles the lamp it controls.
        try await press.press()
        var iterator = changes.makeAsyncIterator()
        var pressed = false, lampOn = false
        while !(pressed && lampOn), let device = await iterator.next() {
            if device.id == "hall-switch",
               device.types[GenericSwitchDeviceType.self]?.matterTraits.switchTrait?.attributes.currentPosition == 1 {
                pressed = true
            }
            if device.id == "kitchen-lamp",
               device.types[DimmableLightDeviceType.self]?.matterTraits.onOffTrait?.attributes.onOff == true {
                lampOn = true
            }
        }
        #expect(pressed && lampOn)
        try await press.release()

        // A two-second fade: the stream sees it running (remainingTime), then its end.
        let level = try #require(try await home.devices().list().first { $0.id == "kitchen-lamp" }?
            .types[DimmableLightDeviceType.self]?.matterTraits.levelControlTrait)
        try await level.moveToLevel(level: 40, transitionTime: 20, optionsMask: [], optionsOverride: [])
        var running = false, ended = false
        while !ended, let device = await iterator.next() {
            guard device.id == "kitchen-lamp",
                let attributes = device.types[DimmableLightDeviceType.self]?.matterTraits.levelControlTrait?.attributes
            else { continue }
            if (attributes.remainingTime ?? 0) > 0 { running = true }
            if attributes.currentLevel == 40 && attributes.remainingTime == 0 { ended = true }
        }
        #expect(running && ended)
    }

    @Test(.timeLimit(.minutes(1)))
    func aKilledHubGoesOfflineAndCommandsFailFast() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        // A long timeout: a command that waited for an answer would outlast the test's limit.
        let home = try await rig.home(timeout: .seconds(120), waitingFor: ["porch-light"])
        defer { home.close() }
        let porch = try #require(try await home.devices().list().first { $0.id == "porch-light" })
        let onOff = try #require(porch.types[OnOffLightDeviceType.self]?.matterTraits.onOffTrait)
        try await onOff.on()

        await rig.hub("sim")?.kill()
        // The broker publishes the hub's will within 1.5 keep-alive periods.
        let offline = try await device(home, "porch-light") { $0.sourceConnectivity.connectivityState == .offline }
        #expect(offline.sourceConnectivity.dataSourceLocality == .direct)
        #expect(
            offline.types[OnOffLightDeviceType.self]?.matterTraits.onOffTrait?.metadata.sourceConnectivity
                .connectivityState
                == .offline)
        let refused = await HomeError.from { try await onOff.toggle() }
        #expect(refused?.code == .unavailable, "\(String(describing: refused))")
        let renamed = await HomeError.from { _ = try await offline.setName("Porch") }
        #expect(renamed?.code == .unavailable, "\(String(describing: renamed))")
    }

    @Test(.timeLimit(.minutes(1)))
    func aHubThatDoesNotAnswerIsDeadlineExceeded() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        // The one timeout bounds the connection too: long enough for a machine loaded by a parallel build to connect
        // (2 s was not, once), short enough for the test; it waits for the request's timeout once, at the end.
        let home = try await rig.home(timeout: .seconds(8), waitingFor: ["porch-light"])
        defer { home.close() }
        let onOff = try #require(try await home.devices().list().first { $0.id == "porch-light" }?
            .types[OnOffLightDeviceType.self]?.matterTraits.onOffTrait)
        // Stopped, the hub still looks online (its connection stays open until its keep-alive runs out) but answers
        // nothing.
        rig.hub("sim")?.signal(SIGSTOP)
        defer { rig.hub("sim")?.signal(SIGCONT) }
        // A signal reaches a busy process's threads a moment later: wait until every one has stopped.
        try await rig.waitUntilStopped("sim")
        let error = await HomeError.from { try await onOff.on() }
        #expect(error?.code == .deadlineExceeded && error?.status == .timeout, "\(String(describing: error))")
    }

    @Test(.timeLimit(.minutes(1)))
    func aDeviceOfAnotherHubIsALocalPeerAndAnswersThroughIt() async throws {
        let rig = try await HubRig()
        try rig.start("attic", devices: """
          - id: attic-light
            type: OnOffLight
            binding: {kind: relay, pin: relay-1}
        """)
        try rig.start("garage", devices: """
          - id: garage-light
            name: Garage light
            type: OnOffLight
            binding: {kind: relay, pin: relay-1}
        """)
        let home = try await rig.home(hub: "attic", waitingFor: ["attic-light", "garage-light"])
        defer { home.close() }
        let devices = try await home.devices().list()
        #expect(devices.map(\.id) == ["attic-light", "garage-light"])
        let garage = try #require(devices.first { $0.id == "garage-light" })
        #expect(garage.hub == "garage")
        #expect(garage.sourceConnectivity.dataSourceLocality == .localPeer)
        let onOff = try #require(garage.types[OnOffLightDeviceType.self]?.matterTraits.onOffTrait)
        #expect(
            onOff.metadata.sourceConnectivity
                == SourceConnectivity(connectivityState: .online, dataSourceLocality: .localPeer))
        #expect(devices.first { $0.id == "attic-light" }?.sourceConnectivity.dataSourceLocality == .direct)
        // Sent to the attic hub, which forwards it to the garage.
        try await onOff.on()
        try await device(home, "garage-light") {
            $0.types[OnOffLightDeviceType.self]?.matterTraits.onOffTrait?.attributes.onOff == true
        }

        // Without a hub, every device is seen as its owner publishes it.
        let owners = try await rig.home(waitingFor: ["garage-light"])
        defer { owners.close() }
        #expect(
            try await owners.devices().list().first { $0.id == "garage-light" }?.sourceConnectivity.dataSourceLocality
                == .direct)
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingAStreamEndsItsSubscription() async throws {
        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        let home = try await rig.home(waitingFor: ["porch-light"])
        defer { home.close() }
        #expect(home.subscriptionCount == 0)
        let started = AsyncStream.makeStream(of: Void.self)
        let watcher = Task {
            var count = 0
            for await _ in home.devices().batched() {
                count += 1
                started.continuation.yield()
            }
            return count
        }
        var iterator = started.stream.makeAsyncIterator()
        await iterator.next()
        #expect(home.subscriptionCount == 1)
        watcher.cancel()
        #expect(await watcher.value >= 1)
        #expect(home.subscriptionCount == 0)

        // The typed subscriptions end the same way, and a device's stream ends with the home.
        let porch = try #require(try await home.devices().list().first { $0.id == "porch-light" })
        let typed = Task {
            for await light in porch.types.subscribe(OnOffLightDeviceType.self) {
                // The guide's example: turn the light on when the first update arrives.
                try await light.matterTraits.onOffTrait?.on()
                break
            }
        }
        try await typed.value
        try await device(home, "porch-light") {
            $0.types[OnOffLightDeviceType.self]?.matterTraits.onOffTrait?.attributes.onOff == true
        }
        let all = porch.types.subscribeAll()
        var types = all.makeAsyncIterator()
        #expect(await types.next()?[OnOffLightDeviceType.self]?.metadata.isPrimaryType == true)
        let one = home.device(id: "porch-light")
        home.close()
        var count = 0
        for try await _ in one { count += 1 }
        #expect(count <= 1)
        #expect(home.subscriptionCount == 0)
        let closed = await HomeError.from { _ = try await home.devices().list() }
        #expect(closed?.code == .cancelled)
    }

    @Test(.timeLimit(.minutes(1)))
    func connectionFailuresAndUnknownDevicesAreHomeErrors() async throws {
        let port = try TestBroker.unusedLoopbackPort()
        // A refusal is told as one however long it takes to arrive: a loaded machine (the AddressSanitizer suite in
        // parallel) once took longer than the default 5 s, and the connection failed as a timeout instead.
        let unreachable = await HomeError.from {
            _ = try await Home.connect(broker: "127.0.0.1:\(port)", timeout: .seconds(60))
        }
        #expect(unreachable?.code == .unavailable && unreachable?.connectionFailure?.kind == .unreachable,
                "\(String(describing: unreachable))")
        let websocket = await HomeError.from { _ = try await Home.connect(broker: "ws://127.0.0.1:\(port)") }
        #expect(websocket?.code == .invalidArgument && websocket?.message.contains("'ws://' is not supported") == true)

        let rig = try await HubRig()
        try rig.start("sim", devices: sampleDevices)
        let home = try await rig.home(hub: "sim", waitingFor: ["porch-light"])
        defer { home.close() }
        let missing = await HomeError.from { for try await _ in home.device(id: "garage") {} }
        #expect(missing?.code == .notFound)
        let noHub = await HomeError.from { _ = try await Home.connect(broker: rig.brokerAddress, hub: "ghost") }
        #expect(noHub?.code == .notFound && noHub?.message.contains("ghost") == true)
        // The untyped path: a request for a device the hub does not have is the hub's own notFound.
        let answer = try await home.send([("setName", .string("x"))], device: "garage", hub: "sim")
        #expect(answer.error?.code == .notFound)
    }
}
