import Foundation
import HearthEngine
@testable import HearthHub
import HearthModel
import Logging
import HearthTestKit
import ServiceLifecycleTestKit
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

@Suite(.timeLimit(.minutes(1))) struct PersistenceServiceTests {
    /// The file as the service left it (empty while there is none).
    func saved(_ store: StateStore) -> [String: SavedDevice] { (try? store.load().devices) ?? [:] }

    /// A change is saved at once; later ones wait for the interval to pass on the clock (the home's clock, here
    /// a manual one: no sleeping), and the save then holds the latest state of every device, not only of those
    /// that changed. At graceful shutdown what changed meanwhile is saved without waiting.
    @Test func savesAtOnceThenAtMostOncePerIntervalAndAtShutdown() async throws {
        let clock = ManualClock()
        let home = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.dimmableLight)]),
            DeviceConfiguration(id: "porch", name: "Porch", types: [DeviceTypeConfiguration(.onOffLight)]),
        ], clock: clock)
        let store = StateStore(directory: NSTemporaryDirectory() + "hearth-persistence-\(UUID().uuidString)")
        let service = PersistenceService(home: home, store: store, interval: .seconds(1), clock: clock,
                                         logger: Logger(label: "test"))
        @Sendable func porchOn() -> Bool { saved(store)["porch"]?.attributes["OnOffLight"]?["onOff"]?["onOff"] == .bool(true) }

        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                // The service may not be observing yet: rename until a save shows a new name.
                var attempt = 0
                let renamed = await poll(within: .seconds(10)) {
                    if saved(store)["lamp"]?.name?.hasPrefix("Desk") == true { return true }
                    attempt += 1
                    _ = try? home.setName("lamp", "Desk \(attempt)")
                    return false
                }
                #expect(renamed)
                #expect(saved(store)["porch"] != nil, "a device that did not change is in the file too")
                // Saved, the service waits out the interval on the clock.
                #expect(await eventually { clock.sleeperCount == 1 })
                try home.invoke("porch", trait: "onOff", command: "on")
                clock.advance(by: 999)
                #expect(clock.sleeperCount == 1, "the interval is not over")
                #expect(!porchOn(), "no save before the interval is over")
                clock.advance(by: 1)
                #expect(await eventually { porchOn() }, "saved once the interval is over")
                #expect(saved(store)["lamp"] == home.savedState()["lamp"], "the lamp's entry is there, as it is")
                #expect(await eventually { clock.sleeperCount == 1 })
                try home.setName("porch", "Porch light")
                #expect(saved(store)["porch"]?.name == nil, "no save before the interval is over (nil: the configured name)")
                trigger.triggerGracefulShutdown()
                try await group.next()
            }
        }
        #expect(saved(store)["porch"]?.name == "Porch light", "saved at shutdown, without waiting for the clock")
        #expect(saved(store) == home.savedState())
    }
}

@Suite(.timeLimit(.minutes(1))) struct ServiceShutdownTests {
    /// The engine's timers stop at graceful shutdown: a transition in flight stays where it was, on a clock
    /// that goes on.
    @Test func theEngineServiceEndsAndLeavesATransitionWhereItWas() async throws {
        let clock = ManualClock()
        let home = try Home(devices: [DeviceConfiguration(id: "lamp", name: "Lamp",
                                                          types: [DeviceTypeConfiguration(.dimmableLight)])],
                            clock: clock)
        try home.invoke("lamp", trait: "onOff", command: "on")
        @Sendable func level() -> Value? { try? home.device("lamp").trait(.levelControl)?["currentLevel"]?.value }
        #expect(level() == .int(254))
        await testGracefulShutdown { trigger in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await EngineService(home: home).run() }
                try? home.invoke("lamp", trait: "levelControl", command: "moveToLevel",
                                 arguments: ["level": .int(54), "transitionTime": .int(20)])
                #expect(await eventually { clock.sleeperCount > 0 }, "the engine waits for the next step")
                clock.advance(by: 1000)
                #expect(await eventually { level() == .int(154) }, "halfway after 1 s of 2")
                trigger.triggerGracefulShutdown()
                await group.next()
            }
        }
        clock.advance(by: 2000)
        #expect(level() == .int(154))
    }

    /// With no bindings, the hardware service still waits for shutdown and then ends.
    @Test func theBindingsServiceEndsAtShutdown() async throws {
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await BindingsService(bindings: []).run() }
                trigger.triggerGracefulShutdown()
                try await group.next()
            }
        }
    }
}
