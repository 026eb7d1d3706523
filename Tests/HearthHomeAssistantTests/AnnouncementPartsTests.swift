import HearthEngine
import HearthHomeAssistant
import HearthModel
import HearthSync
import HearthTestKit
import Testing

/// An announcement of everything writes `announcementsPerTurn` configs, then waits for `afterWritten` to run the
/// next part: the hub's network thread serves requests between parts instead of writing a 1,000-device hub's 2 MB of
/// configs in one go. Here `afterWritten` only keeps the work, and the test runs it when it chooses.
@Suite struct AnnouncementPartsTests {
    final class Recorder: Sendable {
        let messages = Locked<[HomeAssistantMessage]>([])
        let waiting = Locked<[@Sendable () -> Void]>([])
        /// Runs what waits for the written parts (as the client would once the socket took them); false if nothing did.
        func writeOut() -> Bool {
            let work = waiting.withLock { w in defer { w = [] }; return w }
            for w in work { w() }
            return !work.isEmpty
        }
        var configs: [String] { messages.withLock { $0 }.map(\.topic).filter { $0.hasSuffix("/config") } }
    }

    let deviceCount = 150
    let perTurn = HomeAssistantBridge.announcementsPerTurn

    func bridge() throws -> (HomeAssistantBridge, Recorder) {
        let home = try Home(devices: (0..<deviceCount).map {
            DeviceConfiguration(id: "lamp\($0)", name: "Lamp \($0)", types: [DeviceTypeConfiguration(.onOffLight)])
        })
        let recorder = Recorder()
        let bridge = HomeAssistantBridge(
            home: home, options: options, clock: ManualClock(),
            afterWritten: { work in recorder.waiting.withLock { $0.append(work) } }
        ) { m in recorder.messages.withLock { $0.append(m) } }
        return (bridge, recorder)
    }

    /// Brings back the last marker the bridge published, as the broker would: the reading of the retained configs
    /// ends, and the announcement starts.
    func bringBackMarker(_ bridge: HomeAssistantBridge, _ recorder: Recorder) throws {
        let marker = try #require(recorder.messages.withLock { $0 }.last { $0.topic == bridge.discovery.syncTopic })
        bridge.received(topic: marker.topic, payload: marker.payload)
    }

    @Test func everyDeviceIsAnnouncedOncePartByPart() throws {
        let (bridge, recorder) = try bridge()
        bridge.connected()
        try bringBackMarker(bridge, recorder)
        // The hub's config and the first part; the rest waits until they are written.
        #expect(recorder.configs.count == 1 + perTurn)
        var parts = 1
        while recorder.writeOut() { parts += 1 }
        #expect(parts == (deviceCount + perTurn - 1) / perTurn)
        let devices = recorder.configs.dropFirst()
        #expect(devices.count == deviceCount)
        #expect(Set(devices).count == deviceCount)
        #expect(devices.first == "homeassistant/device/hearth_pi/hearth_pi__lamp0/config")
    }

    @Test func aNewConnectionEndsTheAnnouncementUnderWay() throws {
        let (bridge, recorder) = try bridge()
        bridge.connected()
        try bringBackMarker(bridge, recorder)
        #expect(recorder.configs.count == 1 + perTurn)
        // The connection is lost and made again before the first part is written: the old announcement stops there,
        // and the new connection's reading announces everything once more, from the start.
        bridge.connected()
        while recorder.writeOut() {}
        #expect(recorder.configs.count == 1 + perTurn)
        try bringBackMarker(bridge, recorder)
        while recorder.writeOut() {}
        #expect(recorder.configs.count == 1 + perTurn + 1 + deviceCount)
    }

    @Test func homeAssistantsBirthStartsAgainFromTheFirstDevice() throws {
        let (bridge, recorder) = try bridge()
        bridge.connected()
        try bringBackMarker(bridge, recorder)
        bridge.received(topic: bridge.discovery.birthTopic, payload: Array("online".utf8))
        // Two parts wait: the first announcement's, which ends without writing, and the birth's.
        while recorder.writeOut() {}
        #expect(recorder.configs.count == (1 + perTurn) + (1 + deviceCount))
        #expect(recorder.configs.filter { $0.hasSuffix("hearth_pi__lamp149/config") }.count == 1)
    }
}
