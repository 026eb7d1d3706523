import Foundation
import HearthConfig
import HearthHub
import HearthTestKit
import Testing

/// The backup archive's reader and writer, and a hub's backup made and restored on files in a temporary folder.
@Suite final class BackupTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "hearth-backup-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/state/matter", withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let path = "\(directory)/\(name)"
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    func read(_ name: String) -> String? { try? String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8) }

    static func refusal(_ bytes: [UInt8]) -> BackupArchiveError? {
        do { _ = try BackupArchive.read(bytes) } catch { return error }
        return nil
    }

    /// A ustar header for `name`, with a type and a size of our choosing and a right checksum.
    static func header(_ name: String, type: UInt8 = UInt8(ascii: "0"), size: Int = 0) -> [UInt8] {
        var h = Array(BackupArchive.write([BackupMember(name: "hearth.yaml", bytes: [])]).prefix(512))
        for i in 0..<100 { h[i] = 0 }
        for (i, b) in name.utf8.prefix(100).enumerated() { h[i] = b }
        h[156] = type
        let digits = String(size, radix: 8)
        let sizeText = Array((String(repeating: "0", count: 11 - digits.count) + digits).utf8)
        for i in 0..<11 { h[124 + i] = sizeText[i] }
        for i in 148..<156 { h[i] = 0x20 }
        let sum = Array(String(format: "%06o", h.reduce(0) { $0 + Int($1) }).utf8)
        for i in 0..<6 { h[148 + i] = sum[i] }
        h[154] = 0
        return h
    }

    static let end = [UInt8](repeating: 0, count: 1024)

    @Test func membersWrittenReadBackTheSameAndTarListsThem() throws {
        let members = [
            BackupMember(name: "hearth-backup", bytes: Array("hearth-backup 1\n".utf8)),
            BackupMember(name: "hearth.yaml", bytes: Array("hub: {board: sim}\n".utf8)),
            BackupMember(name: "state/state.json", bytes: Array(repeating: 0x41, count: 1500)),
            BackupMember(name: "state/matter/fabrics", bytes: []),
        ]
        let archive = BackupArchive.write(members, modified: 1_700_000_000)
        #expect(archive.count % 512 == 0)
        #expect(try BackupArchive.read(archive) == members)
        // Any tar reads it: the system's tar lists the same names and sizes.
        let file = directory + "/b.tar"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(archive)))
        let tar = Process()
        tar.executableURL = URL(fileURLWithPath: "/usr/bin/tar")
        tar.arguments = ["-tf", file]
        let out = Pipe()
        tar.standardOutput = out
        try tar.run()
        let listed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        tar.waitUntilExit()
        #expect(listed.split(separator: "\n").map(String.init) == members.map(\.name))
    }

    @Test func theReaderRefusesWhatABackupNeverHoldsWithPreciseErrors() {
        let data = [UInt8](repeating: 0x78, count: 512)
        #expect(Self.refusal(Self.header("../etc/passwd", size: 0) + Self.end)
            == .unsafeName("../etc/passwd", reason: "'..' leaves the backup's folder"))
        #expect(Self.refusal(Self.header("state/../../x") + Self.end)
            == .unsafeName("state/../../x", reason: "'..' leaves the backup's folder"))
        #expect(Self.refusal(Self.header("/etc/hearth.yaml") + Self.end)
            == .unsafeName("/etc/hearth.yaml", reason: "an absolute path"))
        #expect(Self.refusal(Self.header("hearth.yaml", type: UInt8(ascii: "2")) + Self.end)
            == .notAFile("hearth.yaml", type: "a symbolic link"))
        #expect(Self.refusal(Self.header("hearth.yaml", type: UInt8(ascii: "1")) + Self.end)
            == .notAFile("hearth.yaml", type: "a hard link"))
        #expect(Self.refusal(Self.header("state/matter", type: UInt8(ascii: "5")) + Self.end)
            == .notAFile("state/matter", type: "a directory"))
        #expect(Self.refusal(Self.header("notes.txt") + Self.end) == .unknownMember("notes.txt"))
        #expect(Self.refusal(Self.header("state/matter/.hidden") + Self.end) == .unknownMember("state/matter/.hidden"))
        #expect(Self.refusal(Self.header("state/state.json", size: 9 << 20) + Self.end)
            == .memberTooLarge("state/state.json", size: 9 << 20))
        #expect(Self.refusal(Self.header("hearth.yaml") + Self.header("hearth.yaml") + Self.end)
            == .duplicate("hearth.yaml"))
        #expect(Self.refusal(Self.header("hearth.yaml", size: 600) + data)
            == .truncated("'hearth.yaml' says 600 bytes but 512 follow its header"))
        #expect(Self.refusal(Self.header("hearth.yaml", size: 10) + data)
            == .truncated("it ends at byte 1024 without its two zero blocks"))
        #expect(Self.refusal(Self.header("hearth.yaml") + Self.end + [1]) == .trailingData(offset: 1536))
        #expect(Self.refusal([]) == .truncated("it is empty"))
        var bad = Self.header("hearth.yaml")
        bad[0] = UInt8(ascii: "H")
        guard case .malformedHeader(0, let reason)? = Self.refusal(bad + Self.end) else {
            Issue.record("a wrong checksum is refused")
            return
        }
        #expect(reason.hasPrefix("its checksum is "))
        #expect(Self.refusal([UInt8](repeating: 0, count: BackupArchive.maximumSize + 512))
            == .tooLarge(size: BackupArchive.maximumSize + 512))
    }

    func place() throws -> BackupPlace {
        let board = Repository.path("boards/sim.yaml")
        let config = try write("etc/hearth.yaml", """
            hub: {id: porch, board: \(board), stateDirectory: \(directory)/state}
            mqtt:
              username: hub
              password: "s3cret: value"   # inline
            devices:
              - {id: lamp, type: OnOffLight}

            """)
        return BackupPlace(configFile: config, stateDirectory: directory + "/state", hardware: BoardHardware(),
                           pendingMarker: config + ".pending")
    }

    @Test func aBackupHoldsTheConfigurationWithoutTheBrokersCredentialsTheBoardAndTheState() throws {
        let place = try place()
        try write("state/state.json", #"{"version":1,"devices":{"lamp":{"name":"Porch lamp"}}}"#)
        try write("state/matter/fabrics", "F")
        try write("state/matter/fabrics.tmp", "half")
        let members = try BackupArchive.read(HubBackup.make(place, modified: 0))
        #expect(members.map(\.name) == ["hearth-backup", "hearth.yaml", "board.yaml", "state/state.json",
                                        "state/matter/fabrics"])
        let config = String(decoding: members[1].bytes, as: UTF8.self)
        #expect(!config.contains("s3cret") && !config.contains("username: hub"))
        #expect(config.contains("username: !secret mqttUsername") && config.contains("password: !secret mqttPassword"))
        #expect(
            members[2].bytes
                == Array(try String(contentsOfFile: Repository.path("boards/sim.yaml"), encoding: .utf8).utf8))
    }

    @Test func aRestoreChecksTheConfigurationWritesItAndStagesTheStateForTheNextStart() throws {
        let place = try place()
        try write("etc/secrets.yaml", "mqttUsername: hub\nmqttPassword: pw\n")
        chmod(directory + "/etc/secrets.yaml", 0o600)
        try write("state/state.json", #"{"version":1,"devices":{"lamp":{"name":"Porch lamp"}}}"#)
        try write("state/matter/fabrics", "F1")
        let archive = try HubBackup.make(place, modified: 0)
        // The hub runs on: its state changes, its fabric is another.
        try write("state/state.json", #"{"version":1,"devices":{}}"#)
        try write("state/matter/fabrics", "F2")
        try write("state/matter/other", "O")
        try write("etc/hearth.yaml", "hub: {board: \(Repository.path("boards/sim.yaml"))}\ndevices: []\n")
        let restored = try HubBackup.restore(archive, into: place)
        #expect(restored.staged == ["matter/fabrics", "state.json"])
        #expect(read("etc/hearth.yaml")?.contains("password: !secret mqttPassword") == true)
        // Marked as not yet started, so that a start that fails after all rolls it back as a saved one is.
        #expect(FileManager.default.fileExists(atPath: directory + "/etc/hearth.yaml.pending"))
        // Nothing under the running hub changed: it is staged.
        #expect(read("state/matter/fabrics") == "F2")
        #expect(try HubBackup.applyStagedRestore(stateDirectory: place.stateDirectory) == ["state.json", "matter"])
        #expect(read("state/state.json")?.contains("Porch lamp") == true)
        #expect(read("state/matter/fabrics") == "F1")
        #expect(read("state/matter/other") == nil)
        #expect(!FileManager.default.fileExists(atPath: directory + "/state/restore"))
        #expect(try HubBackup.applyStagedRestore(stateDirectory: place.stateDirectory) == nil)
    }

    @Test func aRestoreWhoseConfigurationFailsTheChecksChangesNothing() throws {
        let place = try place()
        let good = read("etc/hearth.yaml")
        let archive = BackupArchive.write([
            BackupMember(name: "hearth-backup", bytes: Array("hearth-backup 1\n".utf8)),
            BackupMember(
                name: "hearth.yaml",
                bytes: Array(
                    ("hub: {board: \(Repository.path("boards/sim.yaml"))}\n" + "devices:\n  - {id: lamp, type: Lamp}\n")
                        .utf8)),
            BackupMember(name: "state/state.json", bytes: Array("{}".utf8))
        ])
        do {
            _ = try HubBackup.restore(archive, into: place)
            Issue.record("a configuration with a problem is restored")
        } catch {
            guard case .configuration(let problems) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(problems.first?.file == "hearth.yaml")
            #expect(problems.first?.line == 3)
        }
        #expect(read("etc/hearth.yaml") == good)
        #expect(!FileManager.default.fileExists(atPath: directory + "/etc/hearth.yaml.pending"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/etc/.hearth-restore.yaml"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/state/restore"))
        #expect(throws: BackupError.self) {
            try HubBackup.restore(BackupArchive.write([BackupMember(name: "hearth.yaml", bytes: [])]), into: place)
        }
    }
}
