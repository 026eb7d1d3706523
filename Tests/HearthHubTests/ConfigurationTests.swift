import Foundation
import HearthConfig
import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import HearthTestKit
import Logging
import Testing

@Suite struct ConfigurationTests {
    func read(_ yaml: String) -> (HubConfiguration?, [String]) {
        let d = ConfigDiagnostics()
        guard let root = ConfigValue.parse(yaml, file: "hearth.yaml", diagnostics: d) else {
            return (nil, d.problems.map(\.description))
        }
        let c = HubConfiguration.read(root, diagnostics: d)
        return (c, d.problems.map(\.description).map { $0.replacingBoardLookup() })
    }

    @Test func aFullConfigurationReads() throws {
        let (c, problems) = read("""
        hub:
          id: attic
          board: /dev/null
          stateDirectory: /tmp/hearth-state
          logLevel: debug
        mqtt:
          host: broker.local
          port: 8883
          prefix: home
          keepAlive: 20s
          username: hub
          password: s3cret
          tls: {caFile: /etc/ssl/ca.pem}
        devices:
          - id: lamp
            name: Kitchen lamp
            room: kitchen
            info: {vendorName: Acme, serialNumber: SN-1}
            types:
              - type: DimmableLight
                traits:
                  onOff: {startUpOnOff: toggle}
                  levelControl: {onLevel: 200, options: [executeIfOff], startUpCurrentLevel: null}
              - type: HumiditySensor
          - id: fan
            type: OnOffPlugInUnit
            traits:
              onOff: {features: offOnly}
        """)
        #expect(problems == [])
        let config = try #require(c)
        #expect(config.hubID == "attic")
        #expect(config.prefix == "home")
        #expect(config.mqtt.host == "broker.local")
        #expect(config.mqtt.port == 8883)
        #expect(config.mqtt.keepAlive == 20)
        #expect(config.mqtt.clientID == "hearth-attic")
        #expect(config.mqtt.tls?.caFile == "/etc/ssl/ca.pem")
        #expect(config.logLevel == "debug")
        #expect(config.devices.map(\.configuration.id) == ["lamp", "fan"])
        let lamp = config.devices[0].configuration
        #expect(lamp.roomID == "kitchen")
        #expect(lamp.types.map(\.type.name) == ["DimmableLight", "HumiditySensor"])
        let level = lamp.types[0].traits.first { $0.id == .levelControl }
        #expect(level?.attributes == ["onLevel": .int(200), "options": .int(1), "startUpCurrentLevel": .null])
        #expect(lamp.types[0].traits.first { $0.id == .onOff }?.attributes == ["startUpOnOff": .int(2)])
        #expect(lamp.types[0].traits.first { $0.id == .basicInformation }?.attributes["vendorName"] == .string("Acme"))
        #expect(config.devices[1].configuration.types[0].traits[0].features == ["offOnly"])
    }

    @Test func everyProblemIsListedWithLineAndPath() {
        let (c, problems) = read("""
        hub:
          id: a/b
          board: nowhere
          logLevel: loud
        mqtt:
          port: 0
          colour: blue
        devices:
          - id: lamp
            type: DimmableLamp
          - id: lamp
            type: OnOffLight
          - name: No id
            type: OnOffLight
          - id: sensor
            type: HumiditySensor
            traits:
              onOff: {}
          - id: light
            type: OnOffLight
            traits:
              onOff: {startUpOnOff: sometimes, onTime: -1}
        """)
        #expect(c == nil)
        #expect(
            problems == [
                "hearth.yaml:2:7: hub.id: 'a/b' cannot be used: an id is part of MQTT topics, so it is not "
                    + "empty and has no '/', '+' or '#'",
                "hearth.yaml:3:10: hub.board: no board file 'nowhere'; looked for …",
                "hearth.yaml:4:13: hub.logLevel: expected one of trace, debug, info, notice, warning, error, "
                    + "critical, found 'loud'",
                "hearth.yaml:7:3: mqtt.colour: unknown key 'colour'; allowed: host, port, prefix, clientId, "
                    + "keepAlive, username, password, passwordFile, tls, protocol",
                "hearth.yaml:6:9: mqtt.port: 0 is out of range; allowed: 1…65535",
                "hearth.yaml:10:11: devices[0].type: unknown device type 'DimmableLamp'; known: OnOffLight, "
                    + "DimmableLight, ColorTemperatureLight, OnOffPlugInUnit, HumiditySensor, TemperatureSensor, "
                    + "GenericSwitch, ContactSensor, OccupancySensor, Fan, WindowCovering",
                "hearth.yaml:11:5: devices[1]: the device id 'lamp' is already used on line 9; ids must be unique",
                "hearth.yaml:13:5: devices[2]: missing 'id' (a stable id, used in MQTT topics)",
                "hearth.yaml:18:14: devices[3].traits.onOff: HumiditySensor cannot have trait 'onOff'; it may "
                    + "have identify, relativeHumidityMeasurement, basicInformation",
                "hearth.yaml:22:29: devices[4].traits.onOff.startUpOnOff: expected one of off, on, toggle, "
                    + "found 'sometimes'",
                "hearth.yaml:22:48: devices[4].traits.onOff.onTime: -1 is out of range; allowed: 0…65535"
            ])
    }

    /// The prefix follows the rule `hearth --prefix` follows (TopicScheme.problem(withPrefix:)): `hearth/` would
    /// make every topic `hearth//<hub>/…`, which the CLI never finds.
    @Test(arguments: ["hearth/", "/hearth", "home//hearth", "hearth/#", "$SYS"])
    func aPrefixTheCLIRefusesIsRefused(prefix: String) {
        let (c, problems) = read("""
        hub: {board: /dev/null}
        mqtt:
          prefix: "\(prefix)"
        devices:
          - id: lamp
            type: OnOffLight
        """)
        #expect(c == nil)
        #expect(problems.count == 1 && problems[0].hasPrefix("hearth.yaml:3:")
                    && problems[0].hasSuffix("mqtt.prefix: '\(prefix)' cannot be used: \(TopicScheme.prefixRule)"),
                "\(problems)")
    }

    @Test func whatOnlyTheEngineKnowsIsReportedAgainstTheDevice() throws {
        let (c, problems) = read("""
        hub: {board: /dev/null}
        devices:
          - id: fan
            type: OnOffLight
            traits:
              onOff: {features: [offOnly]}
        """)
        #expect(problems == [])
        let config = try #require(c)
        let d = ConfigDiagnostics()
        HubConfiguration.checkWithEngine(
            config.devices.map { ($0.configuration, $0.line, $0.column) }, file: "hearth.yaml",
            registry: .standard, diagnostics: d)
        #expect(
            d.problems.map(\.description) == [
                "hearth.yaml:3:5: devices(fan): device 'fan' type OnOffLight trait onOff: onOff cannot have "
                    + "both lighting and offOnly (Matter forbids the pair)"
            ])
    }


    /// A door contact and a PIR, with HoldTimeLimits (a Matter struct) as a mapping of its fields.
    @Test func contactAndOccupancySensorsReadWithTheirStructSettings() throws {
        let (c, problems) = read("""
        hub: {board: /dev/null}
        devices:
          - id: front-door
            type: ContactSensor
          - id: hall-motion
            type: OccupancySensor
            traits:
              occupancySensing:
                features: [passiveInfrared]
                holdTime: 90
                holdTimeLimits: {holdTimeMin: 5, holdTimeMax: 600, holdTimeDefault: 60}
        """)
        #expect(problems == [])
        let config = try #require(c)
        let motion = try #require(config.devices[1].configuration.types[0].traits.first { $0.id == .occupancySensing })
        #expect(motion.features == ["passiveInfrared"])
        #expect(
            motion.attributes == [
                "holdTime": .int(90),
                "holdTimeLimits": .structure([
                    "holdTimeMin": .int(5), "holdTimeMax": .int(600), "holdTimeDefault": .int(60)
                ])
            ])
        let d = ConfigDiagnostics()
        HubConfiguration.checkWithEngine(
            config.devices.map { ($0.configuration, $0.line, $0.column) }, file: "hearth.yaml",
            registry: .standard, diagnostics: d)
        #expect(d.problems.isEmpty, "\(d.problems)")
    }

    @Test func aStructSettingIsCheckedFieldByFieldAndAgainstTheEngine() throws {
        let (c, problems) = read("""
        hub: {board: /dev/null}
        devices:
          - id: m1
            type: OccupancySensor
            traits:
              occupancySensing: {holdTimeLimits: {holdTimeMin: 0, holdTimeMax: 600, holdTimeDefault: 60, step: 1}}
          - id: m2
            type: OccupancySensor
            traits:
              occupancySensing: {holdTimeLimits: {holdTimeMin: 5, holdTimeMax: 600}}
        """)
        #expect(c == nil)
        #expect(problems.count == 3, "\(problems)")
        #expect(problems.contains { $0.contains("holdTimeLimits.step: unknown key 'step'") })
        #expect(problems.contains { $0.contains("holdTimeLimits.holdTimeMin: 0 is out of range; allowed: 1…65535") })
        #expect(problems.contains { $0.contains("holdTimeLimits: missing 'holdTimeDefault'") })

        let (engine, fine) = read(
            """
            hub: {board: /dev/null}
            devices:
              - id: m3
                type: OccupancySensor
                traits:
                  occupancySensing: {features: radar, holdTime: 900, holdTimeLimits: {holdTimeMin: 5, \
            holdTimeMax: 600, holdTimeDefault: 60}}
              - id: m4
                type: OccupancySensor
            """)
        #expect(fine == [])
        let d = ConfigDiagnostics()
        HubConfiguration.checkWithEngine(try #require(engine).devices.map { ($0.configuration, $0.line, $0.column) },
                                         file: "hearth.yaml", registry: .standard, diagnostics: d)
        let engineProblems = d.problems.map(\.description)
        #expect(engineProblems.count == 2, "\(engineProblems)")
        #expect(engineProblems.first?.contains("holdTime 900 is out of range; allowed: 5…600 (holdTimeLimits)") == true)
        #expect(engineProblems.last?.contains("occupancySensing needs at least one sensing feature") == true)
    }

    /// A plug's measurement settings: the accuracy list of structs is read element by element with its place, and the
    /// Measurement Accuracy rules that only the engine knows are reported against the device.
    @Test func aPlugsAccuracyListIsCheckedByShapeAndAgainstTheEngine() throws {
        let (c, problems) = read(
            """
            hub: {board: /dev/null}
            devices:
              - id: p1
                type: OnOffPlugInUnit
                traits:
                  electricalPowerMeasurement:
                    features: directCurrent
                    accuracy:
                      - {measurementType: activePower, measured: yes, minMeasuredValue: 0, maxMeasuredValue: 10, \
            accuracyRanges: []}
                      - {measurementType: wattage, measured: true, minMeasuredValue: 0, maxMeasuredValue: 10, \
            accuracyRanges: []}
              - id: p2
                type: OnOffPlugInUnit
                traits:
                  electricalEnergyMeasurement: {features: [importedEnergy, cumulativeEnergy], \
            cumulativeEnergyImported: 12}
            """)
        #expect(c == nil)
        #expect(problems.count == 3, "\(problems)")
        #expect(
            problems.contains {
                $0.hasPrefix("hearth.yaml:9:") && $0.contains("accuracy[0].measured: expected true or false")
            })
        #expect(
            problems.contains {
                $0.hasPrefix("hearth.yaml:10:")
                    && $0.contains("accuracy[1].measurementType: expected one of unspecified, voltage")
            })
        #expect(problems.contains { $0.hasPrefix("hearth.yaml:14:") && $0.contains("cumulativeEnergyImported") })

        let (engine, fine) = read(
            """
            hub: {board: /dev/null}
            devices:
              - id: p3
                type: OnOffPlugInUnit
                traits:
                  electricalPowerMeasurement:
                    features: directCurrent
                    accuracy:
                      - {measurementType: voltage, measured: true, minMeasuredValue: 0, maxMeasuredValue: 26000, \
            accuracyRanges: [{rangeMin: 0, rangeMax: 26000, percentMax: 50, fixedMax: 0}]}
            """)
        #expect(fine == [])
        let d = ConfigDiagnostics()
        HubConfiguration.checkWithEngine(try #require(engine).devices.map { ($0.configuration, $0.line, $0.column) },
                                         file: "hearth.yaml", registry: .standard, diagnostics: d)
        #expect(
            d.problems.map(\.description) == [
                "hearth.yaml:3:5: devices(p3): device 'p3' type OnOffPlugInUnit trait "
                    + "electricalPowerMeasurement: accuracy needs an entry for activePower (the spec requires one)"
            ])
    }

    /// A binding whose command the trait registry would refuse is refused with the
    /// configuration, where it was written, instead of running something else at the first press.
    @Test func aBindingWhoseCommandOrArgumentsAreWrongIsRefused() throws {
        let (c, problems) = read(
            """
            hub: {id: a, board: /dev/null}
            devices:
              - id: hall-switch
                type: GenericSwitch
              - id: lamp
                type: DimmableLight
            bindings:
              - {from: hall-switch, to: {hub: b, device: porch, trait: onOff, command: toggel}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: onOff, command: toggle, args: {colour: red}}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: levelControl, command: moveToLevel, \
            args: {level: 300}}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: levelControl, command: moveToLevel, \
            args: {level: 10, transitionTime: 2.5}}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: onOff, command: offWithEffect, \
            args: {effectIdentifier: dyingLite}}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: levelControl, command: moveToLevel, \
            args: {transitionTime: 5}}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: levelControl, command: moveToLevel, \
            args: {level: "10"}}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: levelControll, command: stop}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: com.example.spinner, command: spin, \
            args: {speed: 3}}}
              - from: hall-switch
                to:
                  device: lamp
                  trait: levelControl
                  command: moveToLevelWithOnOff
                  args: {level: 254, transitionTime: null, optionsMask: {executeIfOff: true}, \
            optionsOverride: {executeIfOff: true}}
              - {from: hall-switch, to: {hub: b, device: porch, trait: onOff, command: offWithEffect, \
            args: {effectIdentifier: dyingLight}}}
            """)
        #expect(problems == [])
        let config = try #require(c)
        let d = ConfigDiagnostics()
        HubConfiguration.checkBindings(config.peerBindings, hub: config.hubID, registry: .standard, diagnostics: d)
        var knownTraits = "basicInformation, booleanState, colorControl, electricalEnergyMeasurement, "
        knownTraits += "electricalPowerMeasurement, fanControl, groups, identify, levelControl, "
        knownTraits += "occupancySensing, onOff, relativeHumidityMeasurement, scenesManagement, switch, "
        knownTraits += "temperatureMeasurement, windowCovering"
        #expect(
            d.problems.map(\.description) == [
                "hearth.yaml:8: bindings[0].to.command: onOff has no command 'toggel'; its commands are off, "
                    + "on, toggle, offWithEffect, onWithRecallGlobalScene, onWithTimedOff",
                "hearth.yaml:9: bindings[1].to.args.colour: toggle has no field 'colour'; it takes none",
                "hearth.yaml:10: bindings[2].to.args.level: moveToLevel.level 300 is out of range; allowed: 0…254",
                "hearth.yaml:11: bindings[3].to.args.transitionTime: moveToLevel.transitionTime must be a "
                    + "whole number, not 2.5",
                "hearth.yaml:12: bindings[4].to.args.effectIdentifier: offWithEffect.effectIdentifier "
                    + "'dyingLite' is not one of delayedAllOff, dyingLight",
                "hearth.yaml:13: bindings[5].to.args: moveToLevel needs the field 'level' (uint8)",
                #"hearth.yaml:14: bindings[6].to.args.level: moveToLevel.level must be uint8, not "10""#,
                "hearth.yaml:15: bindings[7].to.trait: no trait 'levelControll'; known: \(knownTraits)"
            ])
        // What is accepted is sent as written: a manufacturer's trait is the owner's to check.
        #expect(config.bindings[8].arguments.text == #"{"speed":3}"#)
        #expect(config.bindings[9].hub == "a")
        #expect(
            config.bindings[9].arguments.text
                == #"{"level":254,"transitionTime":null,"optionsMask":{"executeIfOff":true},"#
                + #""optionsOverride":{"executeIfOff":true}}"#
        )
        #expect(config.bindings[10].arguments.text == #"{"effectIdentifier":"dyingLight"}"#)
    }

    @Test func aBindingToAnUnknownLocalDeviceOrTypeIsRefused() {
        let (c, problems) = read("""
        hub: {id: a, board: /dev/null}
        devices:
          - id: hall-switch
            type: GenericSwitch
        bindings:
          - {from: hall-switch, to: {device: lamp, trait: onOff, command: toggle}}
          - {from: hall-switch, to: {hub: b, device: lamp, type: DimmableLamp, trait: onOff, command: toggle}}
          - {from: hall-switch, to: {hub: b, device: fan, type: HumiditySensor, trait: onOff, command: toggle}}
          - {from: hall-switch, to: {hub: b, device: lamp, trait: onOff, command: toggle, args: [on]}}
        """)
        #expect(c == nil)
        #expect(
            problems == [
                "hearth.yaml:6:38: bindings[0].to.device: no device 'lamp' on this hub; give 'hub' for another "
                    + "hub's device",
                "hearth.yaml:7:58: bindings[1].to.type: unknown device type 'DimmableLamp'; known: OnOffLight, "
                    + "DimmableLight, ColorTemperatureLight, OnOffPlugInUnit, HumiditySensor, TemperatureSensor, "
                    + "GenericSwitch, ContactSensor, OccupancySensor, Fan, WindowCovering",
                "hearth.yaml:8:57: bindings[2].to.type: HumiditySensor cannot have trait 'onOff'",
                "hearth.yaml:9:89: bindings[3].to.args: expected a mapping, found a list"
            ])
    }
}

extension String {
    /// The board search list depends on where the test runs; keep the message's start.
    func replacingBoardLookup() -> String {
        guard let r = range(of: "looked for ") else { return self }
        return String(self[..<r.upperBound]) + "…"
    }
}

/// Configurations in files: passwords and secrets kept apart, YAML written the way people write it.
@Suite final class ConfigurationFileTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "hearth-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = "\(directory)/\(name)"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    func load(_ yaml: String) throws -> (HubConfiguration?, [String]) {
        let file = try write("hearth.yaml", yaml, mode: 0o644)
        let d = ConfigDiagnostics()
        let c = HubConfiguration.load(file: file, diagnostics: d)
        return (c, (d.problems + d.warnings).map { $0.description.replacingOccurrences(of: directory, with: "DIR") })
    }

    /// hearthd parses its configuration once: the log level comes from the parsed tree, even when something else in
    /// the file is wrong, and the plan made from the same tree lists each problem once.
    @Test func theLogLevelAndThePlanComeFromOneParse() throws {
        let board = Repository.path("boards/sim.yaml")
        let file = try write("hearth.yaml", """
            hub: {board: \(board), logLevel: debug, colour: red}
            devices:
              - {id: lamp, type: OnOffLight}
            """, mode: 0o644)
        let source = HubConfiguration.Source(file: file)
        #expect(source.logLevel == "debug")
        guard
            case .failure(let error) = HubDaemon.plan(
                source, hardware: BoardHardware(), logger: Logger(label: "test"),
                checkingWithEngine: false)
        else {
            Issue.record("an unknown key is a problem")
            return
        }
        #expect(
            error.problems.map(\.message) == [
                "unknown key 'colour'; allowed: " + HubConfiguration.Keys.hub.names.joined(separator: ", ")
            ])
        #expect(
            HubConfiguration.Source(file: try write("loud.yaml", "hub: {logLevel: loud}\n", mode: 0o644)).logLevel
                == nil)
        #expect(HubConfiguration.Source(file: directory + "/missing.yaml").logLevel == nil)
    }

    /// A tunable-white strip on the simulated board. The binding gives the trait its physical range; a range
    /// also written under traits that disagrees, a bad pair of mireds and a coupling bound outside the range are each
    /// refused where they were written.
    @Test func aColorTemperatureLightTakesItsRangeFromTheBindingAndRefusesContradictions() throws {
        let board = Repository.path("boards/sim.yaml")
        func check(_ device: String) throws -> [String] {
            let file = try write("hearth.yaml", "hub: {board: \(board)}\ndevices:\n" + device, mode: 0o644)
            return HubDaemon.check(configFile: file, hardware: BoardHardware())
                .map { $0.description.replacingOccurrences(of: directory, with: "DIR") }
        }
        #expect(try check("""
              - id: strip
                type: ColorTemperatureLight
                traits: {colorControl: {coupleColorTempToLevelMinMireds: 200, startUpColorTemperatureMireds: 250}}
                binding: {kind: cctDimmer, warm: cct-warm, cold: cct-cold, warmMireds: 400, coldMireds: 160}
            """) == [])
        #expect(
            try check(
                """
                  - id: strip
                    type: ColorTemperatureLight
                    traits: {colorControl: {colorTempPhysicalMinMireds: 100}}
                    binding: {kind: cctDimmer, warm: cct-warm, cold: cct-cold, coldMireds: 160}
                """) == [
                    "DIR/hearth.yaml:6:14: devices[0].binding: colorControl.colorTempPhysicalMinMireds is 100 in "
                        + "the device's traits but 160 from this binding's hardware; leave it out of traits (the "
                        + "binding sets it)"
                ])
        #expect(
            try check(
                """
                  - id: strip
                    type: ColorTemperatureLight
                    binding: {kind: cctDimmer, warm: cct-warm, cold: cct-cold, warmMireds: 150}
                """) == [
                    "DIR/hearth.yaml:5:76: devices[0].binding.warmMireds: coldMireds (153) must be below warmMireds "
                        + "(150): mireds are 1000000 / kelvins, so the cold white (e.g. 6500 K = 153) has fewer than "
                        + "the warm one (e.g. 2700 K = 370)"
                ])
        #expect(
            try check(
                """
                  - id: strip
                    type: ColorTemperatureLight
                    traits: {colorControl: {coupleColorTempToLevelMinMireds: 500}}
                    binding: {kind: cctDimmer, warm: cct-warm, cold: cct-cold}
                """) == [
                    "DIR/hearth.yaml:3:5: devices(strip): device 'strip' type ColorTemperatureLight trait "
                        + "colorControl: coupleColorTempToLevelMinMireds 500 is outside the physical range 153…370 "
                        + "(colorTempPhysicalMinMireds…MaxMireds)"
                ])
        #expect(try check("""
              - id: strip
                type: ColorTemperatureLight
                traits: {colorControl: {colorMode: 1}}
            """).count == 1)
    }

    /// The bug this replaced: the password file was parsed as YAML, so `s3cr3t #1` lost its `#1`.
    @Test func aPasswordFileIsReadRawFirstLineOnly() throws {
        for (content, password) in [("s3cr3t #1\n", "s3cr3t #1"), ("a: b\nsecond line\n", "a: b"), ("*x", "*x"),
                                    ("null\r\n", "null"), ("  'quoted' and spaced  \n", "  'quoted' and spaced  ")] {
            _ = try write("mqtt-password", content)
            let (c, problems) = try load("hub: {board: /dev/null}\nmqtt: {passwordFile: mqtt-password}\ndevices: []\n")
            #expect(problems == [])
            #expect(c?.mqtt.password == password)
        }
        _ = try write("mqtt-password", "\n")
        #expect(
            try load("hub: {board: /dev/null}\nmqtt: {passwordFile: mqtt-password}\ndevices: []\n").1
                == [
                    "DIR/hearth.yaml:2:22: mqtt.passwordFile: DIR/mqtt-password is empty; its first line is "
                        + "the password"
                ])
    }

    @Test func aSecretFileOthersCanReadIsRefusedWithTheFix() throws {
        _ = try write("mqtt-password", "hunter2-in-a-file\n", mode: 0o644)
        let (c, problems) = try load("hub: {board: /dev/null}\nmqtt: {passwordFile: mqtt-password}\ndevices: []\n")
        #expect(c == nil)
        #expect(problems == ["DIR/hearth.yaml:2:22: mqtt.passwordFile: DIR/mqtt-password can be read by every user "
                             + "(mode 0644), and it holds a secret: run chmod 600 DIR/mqtt-password"])
        let path = try write("mqtt-password", "hunter2-in-a-file\n", mode: 0o640)
        if geteuid() == 0 {
            // Group-readable is fine only for a root-owned file of our group (the image's root:hearth 0640).
            #expect(try load("hub: {board: /dev/null}\nmqtt: {passwordFile: mqtt-password}\ndevices: []\n").1 == [])
            #expect(chown(path, 4321, 4321) == 0)
        }
        #expect(try load("hub: {board: /dev/null}\nmqtt: {passwordFile: mqtt-password}\ndevices: []\n").1
                == ["DIR/hearth.yaml:2:22: mqtt.passwordFile: DIR/mqtt-password can be read by the users of its group "
                    + "(mode 0640), and it holds a secret: run chmod 600 DIR/mqtt-password"])
    }

    @Test func secretsComeFromSecretsYamlBesideTheConfiguration() throws {
        _ = try write("secrets.yaml", "mqtt_password: \"hunter2 #x\"\nmqtt_user: attic\n")
        let (c, problems) = try load("""
        hub: {board: /dev/null}
        mqtt:
          username: !secret mqtt_user
          password: !secret mqtt_password
        devices: []
        """)
        #expect(problems == [])
        #expect(c?.mqtt.username == "attic")
        #expect(c?.mqtt.password == "hunter2 #x")

        let (_, wrong) = try load("""
        hub: {board: /dev/null, id: !secret mqtt_password}
        mqtt:
          password: !secret mqtt_pasword
          port: !secret mqtt_password
        devices: []
        """)
        #expect(
            wrong == [
                "DIR/hearth.yaml:3:13: mqtt.password: no secret 'mqtt_pasword' in DIR/secrets.yaml; it has "
                    + "mqtt_password, mqtt_user",
                "DIR/hearth.yaml:1:29: hub.id: !secret mqtt_password cannot be used here: secrets.yaml is for "
                    + "credentials (such as mqtt.password); write this value in the configuration",
                "DIR/hearth.yaml:4:9: mqtt.port: !secret mqtt_password cannot be used here: secrets.yaml is "
                    + "for credentials (such as mqtt.password); write this value in the configuration"
            ])
        #expect(!wrong.joined().contains("hunter2"))

        _ = try write("secrets.yaml", "mqtt_password: hunter2\n", mode: 0o604)
        #expect(
            try load("hub: {board: /dev/null}\nmqtt: {password: !secret mqtt_password}\ndevices: []\n").1 == [
                "DIR/secrets.yaml: DIR/secrets.yaml can be read by every user (mode 0604), and it holds a secret: "
                    + "run chmod 600 DIR/secrets.yaml; !secret NAME reads NAME from secrets.yaml beside the "
                    + "configuration"
            ])
    }

    @Test func anchorsMergeKeysAndBlockScalarsInAConfiguration() throws {
        let (c, problems) = try load("""
        # yaml-language-server: $schema=../docs/schema/hearth.schema.json
        x-light: &light
          type: OnOffLight
          traits: {onOff: {startUpOnOff: "off"}}
        hub:
          board: /dev/null
          id: "attic"
        devices:
          - id: porch
            <<: *light
            name: >
              Porch light
              by the door
          - {id: shed, <<: *light}
          - {id: hall, type: GenericSwitch}
        bindings:
          - from: hall
            to: {device: shed, trait: levelControl, command: moveToLevel,
                 args: {level: 42, label: "42", fast: true, optional: null, mode: on}}
        """)
        #expect(c?.devices.map(\.configuration.id) == ["porch", "shed", "hall"])
        #expect(c?.devices.first?.configuration.name == "Porch light by the door\n")
        #expect(c?.devices[1].configuration.types.first?.traits.first?.attributes == ["startUpOnOff": .int(0)])
        #expect(
            c?.bindings.first?.arguments
                == .object([
                    ("level", .int(42)), ("label", .string("42")), ("fast", .bool(true)),
                    ("optional", .null), ("mode", .string("on"))
                ]))
        #expect(
            problems == [
                "DIR/hearth.yaml:19:75: bindings[0].to.args.mode: warning: 'on' is sent as the text \"on\" "
                    + "(YAML 1.2), but YAML 1.1 tools such as Home Assistant read true; write \"on\" in quotes to "
                    + "make it plain that it is text, or true for a boolean"
            ])
    }
}
