import HearthEngine
import HearthHomeAssistant
import HearthModel
import Testing
import HearthSync

/// A kitchen lamp that is also a humidity sensor, a wall switch, a relay, and a lamp mirrored from a peer.
func makeHome() throws -> Home {
    try Home(devices: [
        DeviceConfiguration(id: "kitchen-lamp", name: "Kitchen lamp", roomID: "kitchen", types: [
            DeviceTypeConfiguration(.dimmableLight, traits: [
                TraitConfiguration(.basicInformation, attributes: [
                    "productName": .string("PWM dimmer"), "serialNumber": .string("SN-1"),
                    "hardwareVersionString": .string("rev B"),
                ]),
            ]),
            DeviceTypeConfiguration(.humiditySensor),
        ]),
        DeviceConfiguration(id: "hall_switch", name: "Hall switch", types: [
            DeviceTypeConfiguration(.genericSwitch, traits: [
                TraitConfiguration(.switchTrait, features: ["momentarySwitch", "momentarySwitchRelease"]),
            ]),
        ]),
        DeviceConfiguration(id: "pump", name: "Pump", types: [DeviceTypeConfiguration(.onOffPlugInUnit)]),
        DeviceConfiguration(id: "garage-lamp", name: "Garage lamp", types: [
            DeviceTypeConfiguration(.onOffLight, isMirrored: true),
        ]),
    ])
}

let options = HomeAssistantOptions(hub: "pi", version: "1.2.3")

/// The payload parsed back: just enough JSON reading for these tests (strings, numbers, literals, arrays, objects).
struct Parsed {
    indirect enum Node: Equatable {
        case null, bool(Bool), number(Int), string(String), array([Node]), object([String: Node], keys: [String])
    }
    static func parse(_ bytes: [UInt8]) -> Node? {
        var p = Parsed(bytes: bytes)
        let node = p.value()
        p.skip()
        return p.i == bytes.count ? node : nil
    }
    let bytes: [UInt8]
    var i = 0
    mutating func skip() { while i < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[i]) { i += 1 } }
    mutating func value() -> Node? {
        skip()
        guard i < bytes.count else { return nil }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            var members: [String: Node] = [:], keys: [String] = []
            skip()
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object([:], keys: []) }
            while true {
                skip()
                guard case .string(let k)? = value() else { return nil }
                skip()
                guard bytes[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                guard let v = value() else { return nil }
                members[k] = v; keys.append(k)
                skip()
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                guard bytes[i] == UInt8(ascii: "}") else { return nil }
                i += 1
                return .object(members, keys: keys)
            }
        case UInt8(ascii: "["):
            i += 1
            var items: [Node] = []
            skip()
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array([]) }
            while true {
                guard let v = value() else { return nil }
                items.append(v)
                skip()
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                guard bytes[i] == UInt8(ascii: "]") else { return nil }
                i += 1
                return .array(items)
            }
        case UInt8(ascii: "\""):
            i += 1
            var out: [UInt8] = []
            while bytes[i] != UInt8(ascii: "\"") {
                if bytes[i] == UInt8(ascii: "\\") {
                    i += 1
                    switch bytes[i] {
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "u"):
                        let hex = String(decoding: bytes[(i + 1)...(i + 4)], as: UTF8.self)
                        out.append(contentsOf: String(Character(Unicode.Scalar(UInt32(hex, radix: 16)!)!)).utf8)
                        i += 4
                    default: out.append(bytes[i])
                    }
                } else {
                    out.append(bytes[i])
                }
                i += 1
            }
            i += 1
            return .string(String(decoding: out, as: UTF8.self))
        default:
            for (word, node) in [("null", Node.null), ("true", .bool(true)), ("false", .bool(false))]
                where bytes[i...].starts(with: word.utf8) {
                i += word.utf8.count
                return node
            }
            let start = i
            while i < bytes.count, bytes[i] == UInt8(ascii: "-") || (0x30...0x39).contains(bytes[i]) { i += 1 }
            return Int(String(decoding: bytes[start..<i], as: UTF8.self)).map(Node.number)
        }
    }
}

extension Parsed.Node {
    subscript(_ key: String) -> Parsed.Node? { if case .object(let m, _) = self { m[key] } else { nil } }
    subscript(_ index: Int) -> Parsed.Node? {
        if case .array(let a) = self, a.indices.contains(index) { a[index] } else { nil }
    }
    var string: String? { if case .string(let s) = self { s } else { nil } }
    var keys: [String] { if case .object(_, let k) = self { k } else { [] } }
}

@Suite struct ObjectIDTests {
    @Test func readableIdsStayReadable() {
        #expect(ObjectID.device(hub: "pi", device: "kitchen-lamp") == "hearth_pi__kitchen-lamp")
        #expect(ObjectID.entity(hub: "pi", device: "kitchen-lamp", entity: "dimmable_light-light")
                == "hearth_pi__kitchen-lamp__dimmable_light-light")
    }

    @Test func underscoresAndOtherCharactersAreEscapedSoPairsNeverCollide() {
        #expect(ObjectID.encode("a_b.c é") == "a_5fb_2ec_20_c3_a9")
        #expect(ObjectID.device(hub: "a_b", device: "c") != ObjectID.device(hub: "a", device: "b_c"))
        #expect(ObjectID.device(hub: "a", device: "_5fb") != ObjectID.device(hub: "a_", device: "b"))
    }

    @Test func aHubFindsOnlyItsOwnDevicesInObjectIDs() {
        #expect(ObjectID.encodedDevice(inObjectID: "hearth_pi__kitchen-lamp", hub: "pi") == "kitchen-lamp")
        #expect(ObjectID.encodedDevice(inObjectID: "hearth_pi_5f2__lamp", hub: "pi") == nil)
        #expect(ObjectID.encodedDevice(inObjectID: "hearth_pi", hub: "pi") == nil)
        #expect(ObjectID.encodedDevice(inObjectID: "hearth_pi__", hub: "pi") == nil)
        #expect(ObjectID.encodedDevice(inObjectID: "zigbee2mqtt_0x1234", hub: "pi") == nil)
    }
}

@Suite struct DiscoveryPayloadTests {
    let discovery = HomeAssistantDiscovery(options: options)

    func config(_ home: Home, _ id: String) throws -> (HomeAssistantMessage, Parsed.Node) {
        let message = try #require(discovery.config(try home.view(id)))
        return (message, try #require(Parsed.parse(message.payload), "\(message)"))
    }

    /// `hasConfig` answers without writing the config: it must say what writing it would.
    @Test func whetherADeviceHasAConfigIsKnownWithoutWritingIt() throws {
        // A GenericSwitch needs its kind of switch, an OccupancySensor its way of sensing; every other type is as
        // the catalogue makes it.
        func configuration(_ type: DeviceTypeDescriptor, mirrored: Bool) -> DeviceTypeConfiguration {
            let traits = type == .genericSwitch ? [TraitConfiguration(.switchTrait, features: ["latchingSwitch"])]
                : type == .occupancySensor ? [TraitConfiguration(.occupancySensing, features: ["passiveInfrared"])] : []
            return DeviceTypeConfiguration(type, traits: traits, isMirrored: mirrored)
        }
        let catalogue = try Home(
            devices: DeviceTypeDescriptor.catalogue.map { type in
                DeviceConfiguration(id: type.name, name: type.name, types: [configuration(type, mirrored: false)])
            }
                + DeviceTypeDescriptor.catalogue.map { type in
                    DeviceConfiguration(
                        id: "mirrored-\(type.name)", name: type.name, types: [configuration(type, mirrored: true)])
                })
        for home in [catalogue, try makeHome()] {
            for view in home.views() {
                #expect(discovery.hasConfig(view) == (discovery.configPayload(view) != nil), "\(view.id)")
            }
        }
        #expect(try discovery.hasConfig(catalogue.view("DimmableLight")))
        #expect(try !discovery.hasConfig(catalogue.view("mirrored-DimmableLight")))
    }

    /// Templates are written once per type and reused (`TemplateCache`): a config written after many others of every
    /// shape is byte for byte the one a discovery that has written nothing yet writes.
    @Test func aConfigIsTheSameWhateverWasWrittenBefore() throws {
        let lights: [DeviceTypeDescriptor] = [.onOffLight, .dimmableLight, .colorTemperatureLight, .onOffPlugInUnit]
        var devices: [DeviceConfiguration] = []
        for (i, type) in lights.enumerated() {
            devices.append(
                DeviceConfiguration(id: "first-\(i)", name: "First \(i)", types: [DeviceTypeConfiguration(type)]))
            // The same type second in its device, and beside another of the lights.
            devices.append(DeviceConfiguration(id: "second-\(i)", name: "Second \(i)", types: [
                DeviceTypeConfiguration(.humiditySensor), DeviceTypeConfiguration(type),
                DeviceTypeConfiguration(lights[(i + 1) % lights.count]),
            ]))
        }
        let home = try Home(devices: devices)
        let warm = HomeAssistantDiscovery(options: options)
        for view in home.views() { _ = warm.config(view) }
        for view in home.views().reversed() {
            let cold = HomeAssistantDiscovery(options: options)
            #expect(warm.config(view)?.payload == cold.config(view)?.payload, "\(view.id)")
        }
    }

    @Test func aDeviceIsOneRetainedDeviceBasedConfig() throws {
        let (message, json) = try config(try makeHome(), "kitchen-lamp")
        #expect(message.topic == "homeassistant/device/hearth_pi/hearth_pi__kitchen-lamp/config")
        #expect(message.retain)
        #expect(json.keys == ["device", "origin", "components"])
        #expect(json["origin"] == .object(["name": .string("Hearth"), "sw_version": .string("1.2.3")],
                                          keys: ["name", "sw_version"]))
        let device = try #require(json["device"])
        #expect(device["identifiers"] == .array([.string("hearth_pi__kitchen-lamp")]))
        #expect(device["name"]?.string == "Kitchen lamp")
        #expect(device["manufacturer"]?.string == "Hearth")
        #expect(device["model"]?.string == "PWM dimmer")
        #expect(device["serial_number"]?.string == "SN-1")
        #expect(device["hw_version"]?.string == "rev B")
        #expect(device["sw_version"]?.string == BasicInformationServer.hearthVersion)
        #expect(device["suggested_area"]?.string == "kitchen")
        #expect(device["via_device"]?.string == "hearth_pi")
    }

    @Test func everyTypeMapsToItsEntitiesWithStableUniqueIdsAndRoleNames() throws {
        let (_, json) = try config(try makeHome(), "kitchen-lamp")
        let components = try #require(json["components"])
        #expect(components.keys == ["dimmable_light-light", "dimmable_light-identify", "humidity_sensor-humidity",
                                    "humidity_sensor-identify"])
        let expected: [(String, String, Parsed.Node)] = [
            ("dimmable_light-light", "light", .null), ("dimmable_light-identify", "button", .string("Identify")),
            ("humidity_sensor-humidity", "sensor", .string("Humidity")),
            ("humidity_sensor-identify", "button", .string("Identify humidity")),
        ]
        for (key, platform, name) in expected {
            #expect(components[key]?["platform"]?.string == platform, "\(key)")
            #expect(components[key]?["unique_id"]?.string == "hearth_pi__kitchen-lamp__\(key)")
            #expect(components[key]?["name"] == name, "\(key)")
        }
    }

    @Test func theLightReadsTheDocumentAndSendsHearthRequests() throws {
        let (_, json) = try config(try makeHome(), "kitchen-lamp")
        let light = try #require(json["components"]?["dimmable_light-light"])
        #expect(light["schema"]?.string == "template")
        #expect(light["state_topic"]?.string == "hearth/pi/devices/kitchen-lamp")
        #expect(light["command_topic"]?.string == "hearth/pi/devices/kitchen-lamp/set")
        #expect(
            light["state_template"]?.string
                == "{{ 'on' if value_json.types[0].traits.onOff.attributes.onOff else 'off' }}")
        #expect(
            light["brightness_template"]?.string?.contains(
                "value_json.types[0].traits.levelControl.attributes.currentLevel") == true)
        let on = try #require(light["command_on_template"]?.string)
        #expect(
            on.contains(
                #"{"type":"DimmableLight","trait":"levelControl","command":"moveToLevelWithOnOff","args":{"level":"#))
        #expect(on.contains("(transition * 10) | round | int"))
        #expect(on.contains(#"{"type":"DimmableLight","trait":"onOff","command":"onWithRecallGlobalScene"}"#))
        #expect(on.contains(#"{"type":"DimmableLight","trait":"onOff","command":"on"}"#))
        #expect(light["command_off_template"]?.string == #"{"type":"DimmableLight","trait":"onOff","command":"off"}"#)
    }

    @Test func availabilityNeedsTheHubAndTheTypeOnline() throws {
        let (_, json) = try config(try makeHome(), "kitchen-lamp")
        let sensor = try #require(json["components"]?["humidity_sensor-humidity"])
        #expect(sensor["availability_mode"]?.string == "all")
        #expect(sensor["availability"]?[0]?["topic"]?.string == "hearth/pi/status")
        #expect(sensor["availability"]?[1]?["topic"]?.string == "hearth/pi/devices/kitchen-lamp")
        #expect(sensor["availability"]?[1]?["value_template"]?.string?
            .contains("value_json.types[1].sourceConnectivity.connectivityState == 'online'") == true)
    }

    @Test func sensorsConvertMattersHundredths() throws {
        let (_, json) = try config(try makeHome(), "kitchen-lamp")
        let sensor = try #require(json["components"]?["humidity_sensor-humidity"])
        #expect(sensor["device_class"]?.string == "humidity")
        #expect(sensor["unit_of_measurement"]?.string == "%")
        #expect(sensor["state_class"]?.string == "measurement")
        #expect(sensor["suggested_display_precision"] == .number(1))
        #expect(sensor["value_template"]?.string ==
            "{% set v = value_json.types[1].traits.relativeHumidityMeasurement.attributes.measuredValue %}"
            + "{{ (v / 100) if v is not none else 'None' }}")
    }

    @Test func aPlugIsASwitchAndIdentifyIsAButton() throws {
        let (_, json) = try config(try makeHome(), "pump")
        let relay = try #require(json["components"]?["on_off_plug_in_unit-switch"])
        #expect(relay["platform"]?.string == "switch")
        #expect(relay["name"] == .null)
        #expect(relay["payload_on"]?.string == #"{"type":"OnOffPlugInUnit","trait":"onOff","command":"on"}"#)
        #expect(relay["payload_off"]?.string == #"{"type":"OnOffPlugInUnit","trait":"onOff","command":"off"}"#)
        let identify = try #require(json["components"]?["on_off_plug_in_unit-identify"])
        #expect(identify["device_class"]?.string == "identify")
        #expect(identify["payload_press"]?.string ==
            #"{"type":"OnOffPlugInUnit","trait":"identify","command":"identify","args":{"identifyTime":10}}"#)
    }

    @Test func aWallSwitchIsAnEventEntityFedByTheEventsTopic() throws {
        let home = try makeHome()
        let (message, json) = try config(home, "hall_switch")
        #expect(message.topic == "homeassistant/device/hearth_pi/hearth_pi__hall_5fswitch/config")
        let event = try #require(json["components"]?["generic_switch-press"])
        #expect(event["platform"]?.string == "event")
        #expect(event["event_types"] == .array([.string("switch_latched"), .string("initial_press"),
                                                .string("short_release")]))
        #expect(event["state_topic"]?.string == "hearth/pi/devices/hall_switch/events")

        let log = Locked<[HomeEvent]>([])
        home.observe { batch in log.withLock { $0 += batch } }
        try home.ingest("hall_switch", trait: "switch", .switchPosition(1))
        let messages = log.withLock { $0 }.compactMap(discovery.event)
        #expect(messages.count == 1)
        #expect(messages.first?.topic == "hearth/pi/devices/hall_switch/events")
        #expect(messages.first?.retain == false)
        #expect(messages.first.map { String(decoding: $0.payload, as: UTF8.self) } ==
            #"{"type":"GenericSwitch","trait":"switch","event":"initialPress","fields":{"newPosition":1}}"#)
    }

    @Test func aMirroredDeviceIsLeftToItsOwner() throws {
        #expect(discovery.config(try makeHome().view("garage-lamp")) == nil)
    }

    @Test func theHubIsADeviceWithItsConnectivity() throws {
        let message = discovery.hubConfig()
        #expect(message.topic == "homeassistant/device/hearth_pi/hearth_pi/config")
        let json = try #require(Parsed.parse(message.payload))
        #expect(json["device"]?["identifiers"] == .array([.string("hearth_pi")]))
        #expect(json["components"]?["status"]?["state_topic"]?.string == "hearth/pi/status")
        #expect(json["components"]?["status"]?["device_class"]?.string == "connectivity")
    }

    @Test func namesAreEscapedInJSON() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "d", name: "A \"quoted\"\n\\ lamp",
                                                          types: [DeviceTypeConfiguration(.onOffLight)])])
        let (_, json) = try config(home, "d")
        #expect(json["device"]?["name"]?.string == "A \"quoted\"\n\\ lamp")
    }
}

@Suite struct BridgeTests {
    final class Outbox: Sendable {
        let messages = Locked<[HomeAssistantMessage]>([])
        var all: [HomeAssistantMessage] { messages.withLock { $0 } }
        var topics: [String] { all.map(\.topic) }
        func clear() { messages.withLock { $0 = [] } }
    }

    func bridge() throws -> (Home, HomeAssistantBridge, Outbox) {
        let home = try makeHome()
        let outbox = Outbox()
        let bridge = HomeAssistantBridge(home: home, options: options) { m in outbox.messages.withLock { $0.append(m) }
        }
        home.observe { bridge.handle($0) }
        return (home, bridge, outbox)
    }

    /// Connects and hands the bridge its marker back: the reading of the retained configs ends, found nothing, and
    /// the bridge announces.
    func connect(_ bridge: HomeAssistantBridge, _ outbox: Outbox) throws {
        bridge.connected()
        let marker = try #require(outbox.all.last { $0.topic == "hearth/pi/discovery-sync" })
        bridge.received(topic: marker.topic, payload: marker.payload)
    }

    @Test func connectingAnnouncesTheHubAndItsOwnDevicesOnceTheRetainedConfigsAreRead() throws {
        let (_, bridge, outbox) = try bridge()
        #expect(bridge.subscriptions == ["homeassistant/status", "hearth/pi/discovery-sync"])
        bridge.connected()
        #expect(outbox.topics == ["hearth/pi/discovery-sync"])
        let marker = outbox.all[0]
        bridge.received(topic: marker.topic, payload: marker.payload)
        #expect(outbox.topics == [
            "hearth/pi/discovery-sync", "homeassistant/device/hearth_pi/hearth_pi/config",
            "homeassistant/device/hearth_pi/hearth_pi__kitchen-lamp/config",
            "homeassistant/device/hearth_pi/hearth_pi__hall_5fswitch/config",
            "homeassistant/device/hearth_pi/hearth_pi__pump/config",
        ])
        #expect(outbox.all.dropFirst().allSatisfy { $0.retain })
        #expect(outbox.all.first?.retain == false)
    }

    @Test func homeAssistantsBirthAnnouncesEverythingAgain() throws {
        let (_, bridge, outbox) = try bridge()
        try connect(bridge, outbox)
        outbox.clear()
        bridge.received(topic: "homeassistant/status", payload: Array("offline".utf8))
        #expect(outbox.all.isEmpty)
        bridge.received(topic: "homeassistant/status", payload: Array("online".utf8))
        #expect(outbox.all.count == 4)
    }

    @Test func aRenameReannouncesWithTheSameUniqueIds() throws {
        let (home, bridge, outbox) = try bridge()
        try connect(bridge, outbox)
        let before = try #require(Parsed.parse(outbox.all[2].payload))
        outbox.clear()
        try home.setName("kitchen-lamp", "Cooker lamp")
        #expect(outbox.topics == ["homeassistant/device/hearth_pi/hearth_pi__kitchen-lamp/config"])
        let after = try #require(Parsed.parse(outbox.all[0].payload))
        #expect(after["device"]?["name"]?.string == "Cooker lamp")
        #expect(after["components"]?["dimmable_light-light"]?["unique_id"] ==
                before["components"]?["dimmable_light-light"]?["unique_id"])
        // A change Home Assistant does not see (the structure) announces nothing.
        outbox.clear()
        try home.setStructure("kitchen-lamp", "house")
        #expect(outbox.all.isEmpty)
    }

    @Test func aRetainedConfigOfADeviceThatLeftIsCleared() throws {
        let (_, bridge, outbox) = try bridge()
        let config = Array(#"{"device":{}}"#.utf8)
        let node = "homeassistant/device/hearth_pi"
        bridge.received(topic: "\(node)/hearth_pi__old-lamp/config", payload: config)
        bridge.received(topic: "\(node)/hearth_pi__kitchen-lamp/config", payload: config)
        bridge.received(topic: "\(node)/hearth_pi__garage-lamp/config", payload: config)
        bridge.received(topic: "\(node)/hearth_pi__old-lamp/config", payload: [])
        bridge.received(topic: "\(node)/hearth_pi/config", payload: config)
        // Another hub's, a stranger's, and this hub's in the earlier layout while no reading goes on: left alone.
        bridge.received(topic: "homeassistant/device/hearth_garage/hearth_garage__lamp/config", payload: config)
        bridge.received(topic: "\(node)/hearth_garage__lamp/config", payload: config)
        bridge.received(topic: "homeassistant/device/tasmota_1/config", payload: config)
        bridge.received(topic: "homeassistant/device/hearth_pi__old-lamp/config", payload: config)
        bridge.received(topic: "homeassistant/device/hearth_pi/config", payload: config)
        #expect(outbox.all == [
            HomeAssistantMessage(topic: "\(node)/hearth_pi__old-lamp/config", payload: [], retain: true),
            HomeAssistantMessage(topic: "\(node)/hearth_pi__garage-lamp/config", payload: [], retain: true),
        ])
    }

    @Test func aPressGoesToTheEventsTopic() throws {
        let (home, _, outbox) = try bridge()
        try home.ingest("hall_switch", trait: "switch", .switchPosition(1))
        try home.ingest("hall_switch", trait: "switch", .switchPosition(0))
        #expect(outbox.topics == ["hearth/pi/devices/hall_switch/events", "hearth/pi/devices/hall_switch/events"])
        #expect(outbox.all.map { String(decoding: $0.payload, as: UTF8.self) }.last ==
            #"{"type":"GenericSwitch","trait":"switch","event":"shortRelease","fields":{"previousPosition":1}}"#)
    }
}

@Suite struct DiscoveryJSONTests {
    /// Runs without escapes are copied whole and every byte that JSON must escape is escaped, wherever it falls.
    @Test func stringsAreEscapedExactly() {
        func written(_ s: String) -> String { String(decoding: DiscoveryJSON.string(s).bytes, as: UTF8.self) }
        #expect(written("") == #""""#)
        #expect(written("plain/topic") == #""plain/topic""#)
        #expect(written(#"{{ value_json.types[0].traits.onOff.attributes.onOff }}"#)
                == #""{{ value_json.types[0].traits.onOff.attributes.onOff }}""#)
        #expect(written(#""quoted" and \ back"#) == #""\"quoted\" and \\ back""#)
        #expect(written("\"") == #""\"""#)
        #expect(written("line\nnext\r\ttab\u{01}\u{1f}") == #""line\nnext\r\ttab\u0001\u001f""#)
        #expect(written("Küche 💡 °C") == "\"Küche 💡 °C\"")
        #expect(
            String(decoding: DiscoveryJSON.object([("k\"ey", .array([.string("a\\b"), .null]))]).bytes, as: UTF8.self)
                == #"{"k\"ey":["a\\b",null]}"#)
    }
}
