import HearthConfig
import HearthEngine
@testable import HearthHardware
import HearthSimulator
import HearthModel
import Testing

@Suite("Binding configuration")
struct BindingConfigurationTests {
    func problems(_ rig: Rig) -> [String] { rig.diagnostics.problems.map(\.description) }

    @Test func anUnknownPinListsTheBoardsPins() throws {
        let rig = try Rig()
        #expect(rig.makeBinding("{kind: relay, pin: relay-9}", device: "lamp", type: "OnOffLight") == nil)
        #expect(
            problems(rig) == [
                "hub.yaml:1:20: pin: the board 'sim' has no pin 'relay-9'; its pins are relay-1, relay-2, "
                    + "relay-3, relay-4, dimmer-relay, cct-relay, wall-switch-1, wall-switch-2, button-1, "
                        + "door-contact, motion-sensor, "
                    + "fan-low, fan-medium, fan-high, blind-up, blind-down"
            ])
    }

    @Test func aPinUsedTwiceNamesBothPlaces() throws {
        let rig = try Rig()
        let text = """
            devices:
              - binding:
                  kind: relay
                  pin: relay-1
              - binding:
                  kind: relay
                  chip: hearth-sim
                  line: 0
            """
        let root = try #require(ConfigValue.parse(text, file: "hub.yaml", diagnostics: rig.diagnostics))
        let list = try #require(root.anyMapping?["devices"]?.list)
        for (i, device) in list.enumerated() {
            let context = BindingContext(deviceID: "light-\(i)", typeName: "OnOffLight", board: rig.board,
                                         hardware: rig.hardware, pins: rig.pins, log: rig.logs.log)
            _ = BindingKindRegistry.standard.make(try #require(device.anyMapping?["binding"]), context: context)
        }
        #expect(
            problems(rig) == [
                "hub.yaml:8:13: devices[1].binding.line: GPIO line 0 of hearth-sim is already used by "
                    + "light-0 OnOffLight at hub.yaml:4:12 (devices[0].binding.pin); each pin can drive only one "
                        + "binding"
            ])
    }

    @Test func aKindThatDoesNotFitTheTypeSaysWhichDo() throws {
        let rig = try Rig()
        #expect(rig.makeBinding("{kind: relay, pin: relay-1}", device: "bath", type: "HumiditySensor") == nil)
        #expect(rig.makeBinding("{kind: dimmer, pwm: dimmer-1}", device: "lamp", type: "DimmableLight") == nil)
        #expect(rig.makeBinding("{pin: relay-2}", device: "lamp2", type: "OnOffPlugInUnit") == nil)
        #expect(problems(rig) == [
            "hub.yaml:1:8: kind: a relay binding does not fit a HumiditySensor (it fits OnOffLight, OnOffPlugInUnit); "
                + "for HumiditySensor use kind: humiditySensor",
            "hub.yaml:1:8: kind: unknown binding kind 'dimmer'; kinds: relay, pwmDimmer, cctDimmer, humiditySensor, "
                + "temperatureSensor, "
                + "wallSwitch, contact, pir, pwmFan, relayFan, relayCover",
            "hub.yaml:1:1: missing 'kind'; for OnOffPlugInUnit use kind: relay",
        ])
    }

    @Test func everyBadValueIsReportedInOnePass() throws {
        let rig = try Rig()
        let yaml = """
            kind: pwmDimmer
            pwm: dimmer-1
            relay: wall-switch-1
            frequency: 5
            gamma: steep
            minimumDuty: 0.9
            polarity: upside-down
            colour: warm
            """
        #expect(rig.makeBinding(yaml, device: "lamp", type: "DimmableLight") == nil)
        #expect(problems(rig) == [
            "hub.yaml:8:1: colour: unknown key 'colour'; allowed: kind, pwm, pwmChip, pwmChannel, relay, "
                + "relayActiveLow, "
                + "frequency, gamma, minimumDuty, polarity",
            "hub.yaml:3:8: relay: 'wall-switch-1' is an input on the board 'sim', but a dimmer's relay needs an "
                + "output; "
                + "outputs: relay-1, relay-2, relay-3, relay-4, dimmer-relay, cct-relay, fan-low, fan-medium, "
                    + "fan-high, "
                + "blind-up, blind-down",
            "hub.yaml:4:12: frequency: 5 is out of range; allowed: 10…100000 Hz",
            "hub.yaml:5:8: gamma: expected a number (0.1…5.0), found 'steep'",
            "hub.yaml:6:14: minimumDuty: 0.9 is out of range; allowed: 0.0…0.5",
            "hub.yaml:7:11: polarity: expected one of normal, inversed, found 'upside-down'",
        ])
    }

    @Test func switchAndSensorValuesAreChecked() throws {
        let rig = try Rig()
        #expect(rig.makeBinding("{kind: wallSwitch, pin: relay-1, debounce: 5s, mode: toggle, bias: up}",
                                device: "hall", type: "GenericSwitch") == nil)
        #expect(rig.makeBinding("{kind: humiditySensor, sensor: humidity-2, interval: 10ms, median: 0, staleAfter: 0}",
                                device: "bath", type: "HumiditySensor") == nil)
        #expect(rig.makeBinding("{kind: temperatureSensor, sensor: humidity-1, iio: si7020}",
                                device: "bath", type: "TemperatureSensor") == nil)
        #expect(problems(rig) == [
            "hub.yaml:1:25: pin: 'relay-1' is an output on the board 'sim', but a wall switch needs an input; inputs: "
                + "wall-switch-1, wall-switch-2, button-1, door-contact, motion-sensor",
            "hub.yaml:1:68: bias: expected one of pull-up, pull-down, disabled, as-is, found 'up'",
            "hub.yaml:1:44: debounce: 5s is out of range; allowed: 0.0 seconds … 1.0 seconds",
            "hub.yaml:1:54: mode: expected one of momentary, latching, follow, found 'toggle'",
            "hub.yaml:1:32: sensor: the board 'sim' has no sensor 'humidity-2'; its sensors are humidity-1",
            "hub.yaml:1:54: interval: 10ms is out of range; allowed: 0.1 seconds … 86400.0 seconds",
            "hub.yaml:1:68: median: 0 is out of range; allowed: 1…15",
            "hub.yaml:1:83: staleAfter: 0 is out of range; allowed: 1…1000 intervals",
            "hub.yaml:1:1: give only one of sensor, iio, hwmon and w1 (found sensor and iio)",
        ])
    }

    @Test func theSwitchModeDecidesTheTraitFeatures() throws {
        let rig = try Rig()
        let button = try #require(
            rig.makeBinding("{kind: wallSwitch, pin: button-1}", device: "b", type: "GenericSwitch"))
        #expect(button.requiredFeatures == [.switchTrait: ["momentarySwitch", "momentarySwitchRelease"]])
        #expect(button.extraTraits.map(\.id) == [SimulatedSwitchServer.id])
        let rocker = try #require(rig.makeBinding("{kind: wallSwitch, pin: wall-switch-1, mode: latching}", device: "r",
                                                  type: "GenericSwitch"))
        #expect(rocker.requiredFeatures == [.switchTrait: ["latchingSwitch"]])
        let follow = try #require(rig.makeBinding("{kind: wallSwitch, pin: wall-switch-2, mode: follow}", device: "f",
                                                  type: "GenericSwitch"))
        #expect(follow.requiredFeatures == [.switchTrait: ["latchingSwitch"]])
        #expect(SimulatedHardware.traitServers.map { $0.descriptor.id.qualifiedName } == ["dev.hearth.simulatedSwitch"])

        let real = Rig(board: try shippedBoard("rpi4"))
        let onPi = try #require(
            real.makeBinding("{kind: wallSwitch, pin: wall-switch-1}", device: "s", type: "GenericSwitch"))
        #expect(onPi.extraTraits.isEmpty)
        #expect(onPi.actuator == nil)
    }

    @Test func defaultsAreTheDocumentedOnes() throws {
        let rig = try Rig()
        let relay = try #require(
            rig.makeBinding("{kind: relay, pin: relay-1}", device: "a", type: "OnOffLight") as? RelayBinding)
        #expect(
            relay.configuration
                == RelayConfiguration(pin: PinAddress(chip: "hearth-sim", line: .offset(0), name: "relay-1")))
        let dimmer = try #require(
            rig.makeBinding("{kind: pwmDimmer, pwm: dimmer-1}", device: "b", type: "DimmableLight")
                as? DimmerBinding)
        #expect(dimmer.configuration.frequency == 1000 && dimmer.configuration.gamma == 2.2)
        #expect(dimmer.configuration.minimumDuty == 0 && dimmer.configuration.relay == nil)
        let sensor = try #require(rig.makeBinding("{kind: humiditySensor, sensor: humidity-1}", device: "c",
                                                  type: "HumiditySensor") as? SensorBinding)
        #expect(sensor.configuration.interval == 30_000 && sensor.configuration.median == 1)
        #expect(sensor.configuration.staleAfter == 3 && sensor.configuration.maxRate == nil)
        let button = try #require(rig.makeBinding("{kind: wallSwitch, pin: button-1, controls: [a, b]}", device: "d",
                                                  type: "GenericSwitch") as? WallSwitchBinding)
        #expect(button.configuration.debounce == 20 && button.configuration.mode == .momentary)
        #expect(button.configuration.bias == .pullUp && button.configuration.activeLow)
        #expect(button.configuration.controls == ["a", "b"])
        let direct = try #require(rig.makeBinding("{kind: temperatureSensor, hwmon: sht3x, interval: 2m}", device: "e",
                                                  type: "TemperatureSensor") as? SensorBinding)
        #expect(direct.configuration.sensor == .hwmon("sht3x") && direct.configuration.interval == 120_000)
        #expect(rig.diagnostics.problems.isEmpty)
    }
}
