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
        let router = PeerRouter(home: home, topics: TopicScheme(hub: "a"),
                                mirrors: [MirrorRoute(localDevice: "bathroom", localType: "HumiditySensor", peerHub: "b",
                                                      peerDevice: "climate", peerType: "HumiditySensor")],
                                outbox: PeerOutbox(publish: { _ in }))
        func publish(_ measurements: String) {
            let document = #"{"types":[{"type":"HumiditySensor","traits":{"relativeHumidityMeasurement":{"attributes":\#(measurements)}}}]}"#
            _ = router.handle(MQTTMessage(topic: "hearth/b/devices/climate", payload: Array(document.utf8), retain: true))
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
}
