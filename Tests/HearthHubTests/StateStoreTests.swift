import Foundation
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthModel
import Logging
import HearthTestKit
import ServiceLifecycleTestKit
import Testing
import HearthSync

@Suite struct StateStoreTests {
    func directory() -> String {
        let d = NSTemporaryDirectory() + "hearth-state-\(UUID().uuidString)/nested"
        return d
    }

    @Test func savesAtomicallyAndLoadsBack() throws {
        let store = StateStore(directory: directory())
        let state: [String: SavedDevice] = [
            "lamp": SavedDevice(
                name: "Desk 🏠", structureID: nil, roomID: "",
                attributes: [
                    "DimmableLight": [
                        "onOff": ["onOff": .bool(true), "startUpOnOff": .null],
                        "levelControl": ["currentLevel": .int(42)]
                    ]
                ])
        ]
        try store.save(state)
        #expect(try store.load().devices == state)
        #expect(try store.load().warnings.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.file + ".tmp"))
        try store.save([:])
        #expect(try store.load().devices == [:])
    }

    @Test func groupAndSceneTablesRoundTripAndOldFilesHaveNone() throws {
        let store = StateStore(directory: directory())
        let scene = SavedValue.structure([
            "name": .string("Evening"), "transitionTime": .int(3000),
            "values": .structure(["6": .structure(["0": .bool(true)]), "8": .structure(["0": .int(80)])])
        ])
        let state: [String: SavedDevice] = [
            "lamp": SavedDevice(attributes: [:], tables: ["DimmableLight": [
                "groups": .structure(["1": .string("Downstairs")]), "scenesManagement": .structure(["1/1": scene]),
                "x": .list([.int(1), .list([])]),
            ]]),
        ]
        try store.save(state)
        #expect(try store.load().devices == state)
        #expect(
            try StateStore.decode(JSON.parse(Array(#"{"version":1,"devices":{"a":{"attributes":{}}}}"#.utf8)))["a"]?
                .tables == [:])
    }

    @Test func structsAndListsRoundTrip() throws {
        let store = StateStore(directory: directory())
        let state: [String: SavedDevice] = [
            "plug": SavedDevice(attributes: ["OnOffPlugInUnit": ["electricalEnergyMeasurement": [
                "cumulativeEnergyImported": .structure(["energy": .int(1 << 62), "endSystime": .int(3_600_000)]),
                "someList": .list([.int(1), .structure(["a": .list([])]), .null]),
            ]]]),
        ]
        try store.save(state)
        #expect(try store.load().devices == state)
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
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: store.file))
                == Data(StateStore.encode(["x": SavedDevice(name: "X")])),
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
        @Sendable func porchOn() -> Bool {
            saved(store)["porch"]?.attributes["OnOffLight"]?["onOff"]?["onOff"] == .bool(true)
        }

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
                #expect(
                    saved(store)["porch"]?.name == nil, "no save before the interval is over (nil: the configured name)"
                )
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
                _ = try? home.invoke("lamp", trait: "levelControl", command: "moveToLevel",
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
        let events = Recorder<String>()
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    events.append("started")
                    try await BindingsService(bindings: []).run()
                    events.append("ended")
                }
                // A service that did not wait would have ended by the time its start is seen here.
                #expect(await eventually { events.all.contains("started") })
                events.append("shutdown")
                trigger.triggerGracefulShutdown()
                try await group.next()
            }
        }
        #expect(events.all == ["started", "shutdown", "ended"])
    }
}

/// The records a logger was given, so a test can count them.
struct RecordingLogHandler: LogHandler {
    final class Records: Sendable { let list = Locked<[(level: Logger.Level, message: String)]>([]) }
    let records = Records()
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        records.list.withLock { $0.append((event.level, "\(event.message)")) }
    }

    func count(_ level: Logger.Level, containing text: String = "") -> Int {
        records.list.withLock { $0.filter { $0.level == level && (text.isEmpty || $0.message.contains(text)) }.count }
    }
}

/// A full disk and a file system remounted read-only, for real: a 64 KiB tmpfs mounted over the state directory
/// (mounting needs root, which CI has). Each failure is logged once however often the save is retried, the file
/// on disk stays the last complete state (never torn, no temporary file left behind), the service retries on its
/// own with no new change, and saves as soon as the space or the write access is back.
@Suite(.timeLimit(.minutes(1)), .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
struct PersistenceFaultTests {
    final class Mount: Sendable {
        let path: String
        init() throws {
            path = NSTemporaryDirectory() + "hearth-tmpfs-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            guard mount("tmpfs", path, "tmpfs", 0, "size=64k,mode=0755") == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM)
            }
        }
        func remount(readOnly: Bool) -> Bool {
            mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT) | (readOnly ? UInt(MS_RDONLY) : 0), "size=64k") == 0
        }
        deinit {
            umount2(path, Int32(MNT_DETACH))
            rmdir(path)
        }
    }

    /// Fills the file system under `directory` with one file until the kernel says ENOSPC.
    func fill(_ directory: String) -> String {
        let path = directory + "/filler"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        let block = [UInt8](repeating: 0x55, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        return path
    }

    @Test func aFullDiskAndAReadOnlyRemountAreLoggedOnceRetriedAndSavedWhenTheyClear() async throws {
        let disk = try Mount()
        let clock = ManualClock()
        let home = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.dimmableLight)]),
            DeviceConfiguration(id: "porch", name: "Porch", types: [DeviceTypeConfiguration(.onOffLight)]),
        ], clock: clock)
        let store = StateStore(directory: disk.path)
        let log = RecordingLogHandler()
        let service = PersistenceService(home: home, store: store, interval: .seconds(1), clock: clock,
                                         logger: Logger(label: "test") { _ in log })
        @Sendable func onDisk() -> [UInt8]? { FileManager.default.contents(atPath: store.file).map { Array($0) } }
        @Sendable func savedState() -> [String: SavedDevice] { (try? store.load().devices) ?? [:] }
        /// Lets the service's pauses run out, one after another, `times` times.
        func advance(times: Int) async {
            for _ in 0..<times {
                _ = await eventually { clock.sleeperCount == 1 }
                clock.advance(by: 60_000)
            }
        }

        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                var attempt = 0
                #expect(await poll(within: .seconds(10)) {
                    if savedState()["lamp"]?.name?.hasPrefix("Desk") == true { return true }
                    attempt += 1
                    _ = try? home.setName("lamp", "Desk \(attempt)")
                    return false
                })
                let good = try #require(onDisk())

                // Full: the save fails, is logged once, retried at every pause, and the old file stays whole.
                let filler = fill(disk.path)
                try home.invoke("porch", trait: "onOff", command: "on")
                await advance(times: 6)
                #expect(
                    await eventually { log.count(.error, containing: "No space left") == 1 },
                    "\(log.records.list.withLock { $0 })")
                try home.invoke("porch", trait: "onOff", command: "off")
                await advance(times: 4)
                #expect(log.count(.error) == 1, "logged once, not at every retry")
                #expect(onDisk() == good, "the last complete state stays on disk, untouched")
                #expect(!FileManager.default.fileExists(atPath: store.file + ".tmp"))

                // Space again: saved on a retry, with no new change.
                unlink(filler)
                await advance(times: 2)
                #expect(await eventually { savedState() == home.savedState() })
                #expect(await eventually { log.count(.notice, containing: "saved again") == 1 })

                // Read-only: the same, with its own reason.
                #expect(disk.remount(readOnly: true))
                let before = onDisk()
                try home.setName("porch", "Porch light")
                await advance(times: 6)
                #expect(await eventually { log.count(.error, containing: "Read-only") == 1 })
                #expect(log.count(.error) == 2)
                #expect(onDisk() == before)
                #expect(disk.remount(readOnly: false))
                await advance(times: 2)
                #expect(await eventually { savedState()["porch"]?.name == "Porch light" })
                #expect(await eventually { log.count(.notice, containing: "saved again") == 2 })
                trigger.triggerGracefulShutdown()
                try await group.next()
            }
        }
        #expect(savedState() == home.savedState())
    }
}
