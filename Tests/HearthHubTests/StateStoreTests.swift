import Foundation
import HearthEngine
@testable import HearthHub
import HearthModel
import Logging
import Testing

@Suite struct StateStoreTests {
    func directory() -> String {
        let d = NSTemporaryDirectory() + "hearth-state-\(UUID().uuidString)/nested"
        return d
    }

    @Test func savesAtomicallyAndLoadsBack() throws {
        let store = StateStore(directory: directory())
        let state: [String: SavedDevice] = [
            "lamp": SavedDevice(name: "Desk 🏠", structureID: nil, roomID: "", attributes: [
                "DimmableLight": ["onOff": ["onOff": .bool(true), "startUpOnOff": .null], "levelControl": ["currentLevel": .int(42)]],
            ]),
        ]
        try store.save(state)
        #expect(store.load().devices == state)
        #expect(store.load().warnings.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.file + ".tmp"))
        try store.save([:])
        #expect(store.load().devices == [:])
    }

    @Test func aMissingFileIsAFreshStart() {
        let store = StateStore(directory: directory())
        #expect(store.load().devices.isEmpty)
        #expect(store.load().warnings.isEmpty)
    }

    @Test func aCorruptFileIsMovedAsideWithAWarning() throws {
        let store = StateStore(directory: directory())
        try store.save(["x": SavedDevice(name: "X")])
        try Data("{\"version\":1,\"devices\":{\"x\":".utf8).write(to: URL(fileURLWithPath: store.file))
        let (devices, warnings) = store.load()
        #expect(devices.isEmpty)
        #expect(warnings.count == 1)
        #expect(warnings[0].contains("is corrupt or unreadable; moved it to"))
        let siblings = try FileManager.default.contentsOfDirectory(atPath: store.directory)
        #expect(siblings.contains { $0.hasPrefix("state.json.corrupt-") })
        #expect(!siblings.contains("state.json"))
    }

    @Test func anUnwritableDirectoryIsATypedError() {
        let store = StateStore(directory: "/proc/hearth-cannot-be-here")
        #expect(throws: StateStoreError.self) { try store.save([:]) }
    }
}

@Suite struct PersistenceServiceTests {
    /// Each save re-encodes only the devices that changed; the file must still hold every device, each as it
    /// is now, and the last save at shutdown must match the home exactly.
    @Test func savesOnlyWhatChangedAndKeepsTheRest() async throws {
        let home = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.dimmableLight)]),
            DeviceConfiguration(id: "porch", name: "Porch", types: [DeviceTypeConfiguration(.onOffLight)]),
        ], clock: ManualClock())
        let store = StateStore(directory: NSTemporaryDirectory() + "hearth-persistence-\(UUID().uuidString)")
        let service = PersistenceService(home: home, store: store, interval: .milliseconds(10),
                                         logger: Logger(label: "test"))
        let running = Task { try await service.run() }

        // The service may not be observing yet: repeat the change until a save shows it.
        var saved: [String: SavedDevice] = [:]
        for attempt in 0..<500 {
            try home.setName("lamp", "Desk \(attempt)")
            try await Task.sleep(for: .milliseconds(20))
            saved = store.load().devices
            if saved["lamp"]?.name == "Desk \(attempt)" { break }
        }
        #expect(saved["lamp"]?.name?.hasPrefix("Desk") == true)
        #expect(saved["porch"] != nil, "a device that did not change is in the file too")

        try home.invoke("porch", trait: "onOff", command: "on")
        var porchOn = false
        for _ in 0..<500 where !porchOn {
            try await Task.sleep(for: .milliseconds(10))
            porchOn = store.load().devices["porch"]?.attributes["OnOffLight"]?["onOff"]?["onOff"] == .bool(true)
        }
        #expect(porchOn)
        #expect(store.load().devices["lamp"]?.name == saved["lamp"]?.name, "the lamp's entry is kept as it was")

        running.cancel()
        _ = try? await running.value
        #expect(store.load().devices == home.savedState())
    }
}
