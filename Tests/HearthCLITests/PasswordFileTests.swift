import Foundation
import HearthEngine
import HearthModel
import Testing

/// `--password-file`, which the CLI gained when it moved onto HearthKit (the library reads the file).
@Suite struct PasswordFileTests {
    @Test(.timeLimit(.minutes(1)))
    func aPasswordIsReadFromItsFile() async throws {
        let rig = try await CLIRig(users: ["hub": "hub-secret", "cli": "cli-secret"])
        defer { rig.stop() }
        let directory = NSTemporaryDirectory() + "hearth-password-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "cli-secret\n".write(toFile: "\(directory)/password", atomically: true, encoding: .utf8)
        let set = try await rig.run([
            "set", "relay", "onOff", "on", "--username", "cli", "--password-file", "\(directory)/password"
        ])
        #expect(set.status == 0 && set.stdout.hasPrefix("relay onOff: onOff=true"), "\(set)")
        #expect(try rig.home.device("relay").value(.onOff, "onOff") == .bool(true))

        let missing = try await rig.run(["devices", "--username", "cli", "--password-file", "\(directory)/nothing"])
        #expect(missing.status == 4 && missing.stderr.contains("cannot read the password file"), "\(missing)")
        let both = try await rig.run(["devices", "--password", "x", "--password-file", "\(directory)/password"])
        #expect(both.status == 64 && both.stderr.contains("not both"), "\(both)")
    }
}
