// The node's file storage: what is stored is loaded back, a store replaces the whole value, a removed key is gone,
// and the files are the node's alone.

@testable import HearthMatter
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct NodeStorageTests {
    @Test func filesKeepWhatIsStored() throws {
        var template = Array("/tmp/hearth-matter-storage-XXXXXX".utf8CString)
        let directory = try #require(
            template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        defer {
            for key in ["matter-fabrics", "matter-counters"] { unlink(directory + "/" + key) }
            rmdir(directory)
        }
        let storage = FileNodeStorage(directory: directory)
        #expect(try storage.load(.fabrics) == nil)
        let big = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try storage.store(.fabrics, big)
        #expect(try storage.load(.fabrics) == big)
        try storage.store(.fabrics, [1, 2, 3])
        #expect(try storage.load(.fabrics) == [1, 2, 3])
        var info = stat()
        #expect(stat(directory + "/matter-fabrics", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(access(directory + "/matter-fabrics.tmp", F_OK) != 0)
        try storage.remove(.fabrics)
        #expect(try storage.load(.fabrics) == nil)
        try storage.remove(.fabrics)

        // A node on file storage counts its starts.
        let first = try MatterNodeFixture.node(on: storage)
        #expect(first.commissioning.rebootCount == 1)
        let second = try MatterNodeFixture.node(on: storage)
        #expect(second.commissioning.rebootCount == 2)
    }

    @Test func aStoreInAMissingDirectoryFailsWithItsKey() {
        let storage = FileNodeStorage(directory: "/nonexistent/hearth-matter")
        #expect(throws: StorageError.self) { try storage.store(.counters, [1]) }
        do { try storage.store(.counters, [1]) } catch { #expect(error.key == .counters) }
    }
}

extension MatterNodeFixture {
    static func node(on storage: any NodeStorage) throws -> MatterNodeCore {
        let clock = TestClock()
        return try MatterNodeCore(
            configuration: MatterNodeConfiguration(
                basicInformation: BasicInformationConfiguration(serialNumber: "S", uniqueID: "U"),
                networkInterfaces: { [] }, initialDataVersion: 1),
            storage: storage, keys: StandInKeys(), verifier: StandInVerifier(), attestation: StandInAttestation(),
            started: clock.start, now: { [clock] in clock.now })
    }
}
