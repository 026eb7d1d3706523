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
        #expect(try store.load().devices == state)
        #expect(try store.load().warnings.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.file + ".tmp"))
        try store.save([:])
        #expect(try store.load().devices == [:])
    }

    @Test func aMissingFileIsAFreshStart() throws {
        let store = StateStore(directory: directory())
        #expect(try store.load().devices.isEmpty)
        #expect(try store.load().warnings.isEmpty)
    }

    @Test func aCorruptFileIsMovedAsideWithAWarning() throws {
        let store = StateStore(directory: directory())
        try store.save(["x": SavedDevice(name: "X")])
        try Data("{\"version\":1,\"devices\":{\"x\":".utf8).write(to: URL(fileURLWithPath: store.file))
        let (devices, warnings) = try store.load()
        #expect(devices.isEmpty)
        #expect(warnings.count == 1)
        #expect(warnings[0].contains("is corrupt; moved it to"))
        let siblings = try FileManager.default.contentsOfDirectory(atPath: store.directory)
        #expect(siblings.contains { $0.hasPrefix("state.json.corrupt-") })
        #expect(!siblings.contains("state.json"))
    }

    /// A file that cannot be read is not corrupt: load throws and leaves it exactly where it is. A real EIO from
    /// a regular file: /proc/self/mem, whose first page is never mapped.
    @Test func aReadErrorIsNotCorruptionAndLeavesTheFileAlone() throws {
        let store = StateStore(directory: directory())
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: store.file, withDestinationPath: "/proc/self/mem")
        do {
            _ = try store.load()
            Issue.record("/proc/self/mem cannot be read from its start")
        } catch {
            #expect(error.errno == EIO, "\(error)")
            #expect(error.description.hasPrefix("cannot read \(store.file): Input/output error"), "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory) == ["state.json"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: store.file) == "/proc/self/mem")
    }

    /// A directory or a FIFO where the file should be: refused at once (a FIFO would block the start until
    /// someone writes to it), and left alone.
    @Test(arguments: ["directory", "fifo"]) func aStateFileThatIsNoFileIsRefusedAndLeftAlone(kind: String) throws {
        let store = StateStore(directory: directory())
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        if kind == "directory" {
            try FileManager.default.createDirectory(atPath: store.file, withIntermediateDirectories: false)
        } else {
            #expect(mkfifo(store.file, 0o600) == 0)
        }
        let error = #expect(throws: StateStoreError.self) { try store.load() }
        #expect(error?.description.contains(kind == "directory" ? "it is a directory" : "not a regular file") == true,
                "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory) == ["state.json"])
    }

    /// fsync of the temporary file fails (here because it is a link to /dev/null, which cannot be synced: EINVAL):
    /// the error carries fsync's errno, not one left over from an earlier call, and the file is not renamed.
    @Test func aFailedFlushReportsItsOwnErrno() throws {
        let store = StateStore(directory: directory())
        try store.save(["x": SavedDevice(name: "X")])
        #expect(symlink("/dev/null", store.file + ".tmp") == 0)
        do {
            try store.save(["x": SavedDevice(name: "Y")])
            Issue.record("the flush cannot succeed")
        } catch {
            #expect(error.errno == EINVAL, "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: store.file + ".tmp"), "the temporary file is removed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.file)) == Data(StateStore.encode(["x": SavedDevice(name: "X")])),
                "the saved state is the old one")
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
            saved = try store.load().devices
            if saved["lamp"]?.name == "Desk \(attempt)" { break }
        }
        #expect(saved["lamp"]?.name?.hasPrefix("Desk") == true)
        #expect(saved["porch"] != nil, "a device that did not change is in the file too")

        try home.invoke("porch", trait: "onOff", command: "on")
        var porchOn = false
        for _ in 0..<500 where !porchOn {
            try await Task.sleep(for: .milliseconds(10))
            porchOn = try store.load().devices["porch"]?.attributes["OnOffLight"]?["onOff"]?["onOff"] == .bool(true)
        }
        #expect(porchOn)
        #expect(try store.load().devices["lamp"]?.name == saved["lamp"]?.name, "the lamp's entry is kept as it was")

        running.cancel()
        _ = try? await running.value
        #expect(try store.load().devices == home.savedState())
    }
}
