import HearthEngine
import HearthHomeAssistant
import HearthModel
import Testing
import HearthSync

/// A metered plug and a DS18B20 as Home Assistant sees them: power, voltage and current sensors, an energy sensor
/// the energy dashboard takes (total_increasing), each available with its own trait, and a temperature sensor.
@Suite struct PowerDiscoveryTests {
    let discovery = HomeAssistantDiscovery(options: options)

    func home() throws -> Home {
        try Home(devices: [
            DeviceConfiguration(id: "desk-plug", name: "Desk plug", types: [
                DeviceTypeConfiguration(.onOffPlugInUnit, traits: [
                    TraitConfiguration(.electricalPowerMeasurement, features: ["directCurrent"]),
                    TraitConfiguration(.electricalEnergyMeasurement, features: ["importedEnergy", "cumulativeEnergy"]),
                ]),
            ]),
            DeviceConfiguration(id: "garden", name: "Garden thermometer",
                                types: [DeviceTypeConfiguration(.temperatureSensor)]),
        ], clock: ManualClock())
    }

    func component(_ home: Home, _ device: String, _ key: String) throws -> Parsed.Node {
        let message = try #require(discovery.config(try home.view(device)))
        let json = try #require(Parsed.parse(message.payload))
        return try #require(json["components"]?[key], "\(json.keys) \(json["components"]?.keys ?? [])")
    }

    @Test func aMeteredPlugHasPowerVoltageCurrentAndEnergySensors() throws {
        let home = try home()
        for (key, deviceClass, unit, attribute) in [
            ("power", "power", "W", "activePower"), ("voltage", "voltage", "V", "voltage"),
            ("current", "current", "A", "activeCurrent"),
        ] {
            let sensor = try component(home, "desk-plug", "on_off_plug_in_unit-\(key)")
            #expect(sensor["platform"]?.string == "sensor")
            #expect(sensor["device_class"]?.string == deviceClass)
            #expect(sensor["unit_of_measurement"]?.string == unit)
            #expect(sensor["state_class"]?.string == "measurement")
            #expect(sensor["name"]?.string == key.prefix(1).uppercased() + key.dropFirst())
            #expect(
                sensor["value_template"]?.string == "{% set v = value_json.types[0].traits.electricalPowerMeasurement"
                    + ".attributes.\(attribute) %}{{ (v / 1000) if v is not none else 'None' }}")
            let availability = try #require(sensor["availability"])
            #expect(availability[1]?["value_template"]?.string == "{{ 'online' if value_json.types[0].traits."
                + "electricalPowerMeasurement.sourceConnectivity.connectivityState == 'online' else 'offline' }}")
        }
        let energy = try component(home, "desk-plug", "on_off_plug_in_unit-energy")
        #expect(energy["device_class"]?.string == "energy")
        #expect(energy["unit_of_measurement"]?.string == "Wh")
        #expect(energy["state_class"]?.string == "total_increasing")
        #expect(energy["value_template"]?.string == "{% set v = value_json.types[0].traits.electricalEnergyMeasurement"
            + ".attributes.cumulativeEnergyImported %}{{ (v.energy / 1000) if v is not none else 'None' }}")
        // The switch stays usable while only the meter fails: it is available with onOff, not with the whole type.
        let relay = try component(home, "desk-plug", "on_off_plug_in_unit-switch")
        #expect(relay["name"] == .null)
        #expect(relay["availability"]?[1]?["value_template"]?.string == "{{ 'online' if value_json.types[0]"
            + ".traits.onOff.sourceConnectivity.connectivityState == 'online' else 'offline' }}")
    }

    @Test func aDS18B20IsATemperatureSensor() throws {
        let home = try home()
        let t = try component(home, "garden", "temperature_sensor-temperature")
        #expect(t["device_class"]?.string == "temperature")
        #expect(t["unit_of_measurement"]?.string == "°C")
    }

    @Test func theEnergyEventGoesToTheEventsTopic() throws {
        let home = try home()
        let log = EventCollector(home)
        try home.ingest("desk-plug", trait: "electricalEnergyMeasurement",
                        .electricalPower(ElectricalReading(activePower: 1000)))
        let messages = log.events.compactMap(discovery.event)
        #expect(messages.map { String(decoding: $0.payload, as: UTF8.self) } == [
            #"{"type":"OnOffPlugInUnit","trait":"electricalEnergyMeasurement","event":"cumulativeEnergyMeasured","#
                + #""fields":{"energyImported":{"energy":0,"endSystime":0}}}"#,
        ])
    }
}

final class EventCollector: Sendable {
    private let log = Locked<[HomeEvent]>([])
    init(_ home: Home) { home.observe { batch in self.log.withLock { $0 += batch } } }
    var events: [HomeEvent] { log.withLock { $0 } }
}
