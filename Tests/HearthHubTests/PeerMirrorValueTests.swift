import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import Testing

/// A broken or hostile owner cannot put a value into a mirrored trait that the trait's descriptor refuses
/// (found by the `peer` fuzz target: a string for `measuredValue` was mirrored as it was, and published in this
/// hub's document as if it were the sensor's reading).
@Suite struct PeerMirrorValueTests {
    @Test func aValueTheDescriptorRefusesIsLeftOutOfTheMirror() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "bathroom", name: "Bathroom", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit), DeviceTypeConfiguration(.humiditySensor, isMirrored: true),
        ])], clock: ManualClock())
        let router = PeerRouter(
            home: home, topics: TopicScheme(hub: "a"),
            mirrors: [
                MirrorRoute(
                    localDevice: "bathroom", localType: "HumiditySensor", peerHub: "b",
                    peerDevice: "climate", peerType: "HumiditySensor")
            ],
            outbox: PeerOutbox(publish: { _ in }))
        func publish(_ measurements: String) {
            let document =
                #"{"types":[{"type":"HumiditySensor","#
                + #""traits":{"relativeHumidityMeasurement":{"attributes":\#(measurements)}}}]}"#
            _ = router.handle(
                MQTTMessage(topic: "hearth/b/devices/climate", payload: Array(document.utf8), retain: true))
            home.drainLanes()
        }
        func reading(_ name: String) throws -> Value? {
            try home.device("bathroom").type(named: "HumiditySensor")?.trait(.relativeHumidityMeasurement)?[name]?.value
        }
        _ = router.handle(MQTTMessage(topic: "hearth/b/status", payload: Array("online".utf8), retain: true))

        publish(#"{"measuredValue":6120,"minMeasuredValue":null,"maxMeasuredValue":10000}"#)
        #expect(try reading("measuredValue") == .int(6120))
        #expect(try reading("minMeasuredValue") == .null)

        // A string for a uint16, a number beyond its range, a value beyond the attribute's constraint.
        publish(#"{"measuredValue":"wet","minMeasuredValue":-5,"maxMeasuredValue":99999999}"#)
        #expect(try reading("measuredValue") == nil)
        #expect(try reading("minMeasuredValue") == nil)
        #expect(try reading("maxMeasuredValue") == nil)
        let document = DeviceDocument.document(try home.device("bathroom")).text
        #expect(!document.contains("wet") && !document.contains("99999999"))
    }

    /// A metered plug mirrored from another hub: int64 readings, the accuracy list of structs and the energy struct
    /// arrive as the owner published them; a list element of the wrong shape keeps the whole list out.
    @Test func aMeteredPlugsListsAndInt64sAreMirrored() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "plug", name: "Plug", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit, traits: [
                TraitConfiguration(.electricalPowerMeasurement, features: ["directCurrent"]),
                TraitConfiguration(.electricalEnergyMeasurement, features: ["importedEnergy", "cumulativeEnergy"]),
            ], isMirrored: true),
        ])], clock: ManualClock())
        let router = PeerRouter(home: home, topics: TopicScheme(hub: "a"),
                                mirrors: [MirrorRoute(localDevice: "plug", localType: "OnOffPlugInUnit", peerHub: "b",
                                                      peerDevice: "desk-plug", peerType: "OnOffPlugInUnit")],
                                outbox: PeerOutbox(publish: { _ in }))
        _ = router.handle(MQTTMessage(topic: "hearth/b/status", payload: Array("online".utf8), retain: true))
        func publish(_ power: String) {
            let document =
                #"{"types":[{"type":"OnOffPlugInUnit","traits":{"electricalPowerMeasurement":{"attributes":\#(power)},"#
                + #""electricalEnergyMeasurement":{"attributes":{"cumulativeEnergyImported":{"#
                + #""energy":4611686018427387904,"endSystime":5}}}}}]}"#
            _ = router.handle(
                MQTTMessage(topic: "hearth/b/devices/desk-plug", payload: Array(document.utf8), retain: true))
            home.drainLanes()
        }
        func value(_ trait: TraitID, _ name: String) throws -> Value? {
            try home.device("plug").type(named: "OnOffPlugInUnit")?.trait(trait)?[name]?.value
        }
        let range = #"{"rangeMin":0,"rangeMax":100,"percentMax":100,"fixedMax":0}"#
        let accuracy =
            #"{"measurementType":"activePower","measured":true,"minMeasuredValue":0,"maxMeasuredValue":100,"#
            + #""accuracyRanges":[\#(range)]}"#
        publish(#"{"activePower":-4611686018427387904,"voltage":null,"accuracy":[\#(accuracy)]}"#)
        #expect(try value(.electricalPowerMeasurement, "activePower") == .int(-(1 << 62)))
        #expect(try value(.electricalPowerMeasurement, "voltage") == .null)
        let list = try #require(try value(.electricalPowerMeasurement, "accuracy")?.listValue)
        #expect(list.first?.structureValue?["measurementType"] == .int(5))
        #expect(list.first?.structureValue?["accuracyRanges"]?.listValue?.count == 1)
        #expect(
            try value(.electricalEnergyMeasurement, "cumulativeEnergyImported")?.structureValue?["energy"]
                == .int(1 << 62))

        publish(#"{"activePower":5,"accuracy":[\#(accuracy),{"measurementType":"activePower"}]}"#)
        #expect(try value(.electricalPowerMeasurement, "activePower") == .int(5))
        #expect(try value(.electricalPowerMeasurement, "accuracy") == nil)
    }
}
