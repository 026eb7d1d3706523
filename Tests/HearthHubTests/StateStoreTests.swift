import Foundation
import HearthEngine
@testable import HearthHub
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
