import HearthHardware
import HearthSimulator
import Testing

/// The simulated board remembers its writes for tests, but only the newest few thousand of each record: a board that
/// runs for weeks (`scripts/run`, the soak) must not grow with every write. The first 30-minute soak found it did.
@Suite struct SimulatedRecordTests {
    @Test func aLineSwitchedTwentyThousandTimesKeepsOnlyTheNewestWrites() throws {
        let rig = try Rig()
        let line = try rig.simulation.openOutput(PinAddress(chip: "hearth-sim", line: .offset(0), name: "relay-1"),
                                                 initialValue: false, activeLow: false, drive: .pushPull)
        for i in 1...20_000 { try line.set(i % 2 == 1) }
        let output = try #require(rig.simulation.output(try key(rig, "relay-1")))
        #expect((4096..<8192).contains(output.history.count), "\(output.history.count) values kept")
        #expect(Array(output.history.suffix(4)) == [true, false, true, false], "the newest are kept, in order")
        #expect(output.value == false)
        #expect(
            (4096..<8192).contains(rig.simulation.operations.count),
            "\(rig.simulation.operations.count) operations kept")
    }
}
