import HearthEngine
import HearthHardware
import HearthHardwareLinux
import HearthHub
import HearthModel
import HearthSimulator
import Testing

@Suite("Hardware provider")
struct HardwareProviderTests {
    @Test func theBoardPicksTheBackend() {
        let provider = BoardHardware()
        #expect(provider.backend(for: Board(name: "sim", isSimulated: true)) is SimulatedHardware)
        #expect(provider.backend(for: Board(name: "rpi4", isSimulated: false)) is LinuxHardware)
        #expect(provider.traitServers.map { $0.descriptor.id } == [SimulatedSwitchServer.id])
    }
}
