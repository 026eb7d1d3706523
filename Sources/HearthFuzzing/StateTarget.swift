import HearthEngine
import HearthHub
import HearthJSON
#if canImport(Glibc)
import Glibc
#endif

/// The state file as a hub loads it at start-up (`StateStore.load`, then `Home(saved:)`), from a real file.
///
/// Promises (`StateStore`, docs/architecture.md): a regular file never makes the load throw; a file that is not a
/// state file is moved aside, byte for byte, with one warning, and never read again; one that is, is left exactly
/// as it is, reads the same when written again, and restores into a real home without a crash, skipping (with a
/// warning) what does not fit, so that every value in the home is one its descriptor allows; and what that home
/// would save next is restored without a warning.
enum StateTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let directory = Workspace.makeDirectory("state")
        for name in Workspace.list(directory) { unlink("\(directory)/\(name)") }
        let path = Workspace.write("state/state.json", bytes)
        let store = StateStore(directory: directory)
        let loaded: (devices: [String: SavedDevice], warnings: [String])
        do throws(StateStoreError) { loaded = try store.load() } catch {
            throw FuzzFailure("loading a regular state file threw: \(error)")
        }
        let decodable: Bool
        do { _ = try StateStore.decode(try JSON.parse(bytes)); decodable = true } catch { decodable = false }

        if !loaded.warnings.isEmpty {
            try require(!decodable, "a state file that decodes was called corrupt: \(loaded.warnings)")
            try require(
                loaded.devices.isEmpty && loaded.warnings.count == 1, "a corrupt file gave devices or several warnings")
            try require(Workspace.read(path) == nil, "the corrupt file was left in place")
            let aside = Workspace.list(directory).filter { $0.hasPrefix("state.json.corrupt-") }
            try require(aside.count == 1, "the corrupt file is not moved aside once (\(aside))")
            try require(Workspace.read("\(directory)/\(aside[0])") == bytes, "the file moved aside is not the file")
            return
        }
        try require(decodable, "a file that does not decode was loaded without a warning")
        try require(Workspace.read(path) == bytes, "loading changed the state file")
        let again = StateStore.encode(loaded.devices)
        let reread: [String: SavedDevice]
        do { reread = try StateStore.decode(try JSON.parse(again)) } catch {
            throw FuzzFailure("the state written again does not load (\(error)): \(shown(again))")
        }
        try require(reread == loaded.devices, "the state written again loads as another state: \(shown(again))")

        let (home, _, _) = try HomeFixture.make(saved: loaded.devices)
        var checker = HomeFixture.Checker()
        try checker.check(home)
        let (next, _, _) = try HomeFixture.make(saved: home.savedState())
        try require(next.restoreWarnings.isEmpty,
                    "what a restored home saves warns when restored: \(next.restoreWarnings.joined(separator: "; "))")
    }
}
