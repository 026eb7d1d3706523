import HearthEngine
import HearthHomeAssistant
import HearthModel
import Testing
import HearthSync

/// A door contact and a PIR occupancy sensor as Home Assistant binary sensors, and their trait events.
@Suite struct BinarySensorDiscoveryTests {
    let discovery = HomeAssistantDiscovery(options: options)

    func home() throws -> Home {
        try Home(devices: [
            DeviceConfiguration(id: "front-door", name: "Front door", roomID: "hall",
                                types: [DeviceTypeConfiguration(.contactSensor)]),
            DeviceConfiguration(id: "hall-motion", name: "Hall motion", types: [
                DeviceTypeConfiguration(.occupancySensor, traits: [
                    TraitConfiguration(.occupancySensing, features: ["passiveInfrared"],
                                       attributes: ["holdTime": .int(10)]),
                ]),
            ]),
        ], clock: ManualClock())
    }

    func component(_ home: Home, _ device: String, _ key: String) throws -> Parsed.Node {
        let message = try #require(discovery.config(try home.view(device)))
        let json = try #require(Parsed.parse(message.payload))
        return try #require(json["components"]?[key], "\(json.keys) \(json["components"]?.keys ?? [])")
    }

    @Test func aContactSensorIsADoorBinarySensorOnWhileTheContactIsOpen() throws {
        let home = try home()
        let door = try component(home, "front-door", "contact_sensor-contact")
        #expect(door["platform"]?.string == "binary_sensor")
        #expect(door["device_class"]?.string == "door")
        #expect(door["name"] == .null, "the primary type's main entity is the device")
        #expect(door["unique_id"]?.string == "hearth_pi__front-door__contact_sensor-contact")
        #expect(door["state_topic"]?.string == "hearth/pi/devices/front-door")
        #expect(door["value_template"]?.string
            == "{{ 'OFF' if value_json.types[0].traits.booleanState.attributes.stateValue else 'ON' }}")
        #expect(door["payload_on"]?.string == "ON" && door["payload_off"]?.string == "OFF")
        #expect(door["availability_mode"]?.string == "all")
        #expect(try component(home, "front-door", "contact_sensor-identify")["platform"]?.string == "button")
    }

    @Test func anOccupancySensorIsAnOccupancyBinarySensorReadingTheOccupiedFlag() throws {
        let home = try home()
        let motion = try component(home, "hall-motion", "occupancy_sensor-occupancy")
        #expect(motion["platform"]?.string == "binary_sensor")
        #expect(motion["device_class"]?.string == "occupancy")
        #expect(motion["value_template"]?.string
            == "{{ 'ON' if value_json.types[0].traits.occupancySensing.attributes.occupancy.occupied else 'OFF' }}")
    }

    @Test func theirEventsGoToTheEventsTopicWithBitmapsByName() throws {
        let home = try home()
        let log = Locked<[HomeEvent]>([])
        home.observe { batch in log.withLock { $0 += batch } }
        try home.ingest("front-door", trait: "booleanState", .binaryState(false))
        try home.ingest("front-door", trait: "booleanState", .binaryState(true))
        try home.ingest("hall-motion", trait: "occupancySensing", .binaryState(false))
        try home.ingest("hall-motion", trait: "occupancySensing", .binaryState(true))
        let messages = log.withLock { $0 }.compactMap(discovery.event)
        #expect(messages.map(\.topic)
                    == ["hearth/pi/devices/front-door/events", "hearth/pi/devices/hall-motion/events"])
        #expect(messages.map { String(decoding: $0.payload, as: UTF8.self) } == [
            #"{"type":"ContactSensor","trait":"booleanState","event":"stateChange","fields":{"stateValue":true}}"#,
            #"{"type":"OccupancySensor","trait":"occupancySensing","event":"occupancyChanged","#
                + #""fields":{"occupancy":{"occupied":true}}}"#,
        ])
        #expect(messages.allSatisfy { !$0.retain })
    }
}
