import HearthConfig
@testable import HearthHardware
import Testing

@Suite("Board files")
struct BoardTests {
    @Test(arguments: ["rpi4", "rpi5", "rpi-zero-2w", "sim", "qemu-gpio-sim"])
    func everyShippedBoardLoads(_ name: String) throws {
        let board = try shippedBoard(name)
        #expect(board.name == name)
        #expect(board.file == boardFile(name))
        #expect(!board.pins.isEmpty)
        for pin in board.pins {
            let chip = try #require(board.gpioChips.first { $0.label == pin.chipLabel })
            #expect(pin.offset < chip.lineCount)
        }
        #expect(board.isSimulated == (name == "sim"))
    }

    @Test func raspberryPiBoardsNameTheirChipsByLabel() throws {
        #expect(try shippedBoard("rpi4").gpioChips.map(\.label) == ["pinctrl-bcm2711"])
        #expect(try shippedBoard("rpi5").gpioChips.map(\.label) == ["pinctrl-rp1"])
        #expect(try shippedBoard("rpi-zero-2w").gpioChips.map(\.label) == ["pinctrl-bcm2835"])
        let pi4 = try shippedBoard("rpi4")
        #expect(
            pi4.pin(named: "relay-1")
                == BoardPin(
                    name: "relay-1", chipLabel: "pinctrl-bcm2711", offset: 17,
                    direction: .output, use: "relay", line: pi4.pin(named: "relay-1")!.line))
        #expect(pi4.pwmChannels.map { "\($0.name)=\($0.chip)/\($0.channel)" } == ["dimmer-1=0/0", "dimmer-2=0/1"])
        #expect(try shippedBoard("rpi5").pwmChannels.map { "\($0.chip)/\($0.channel)" } == ["2/2", "2/3"])
        #expect(pi4.sensor(named: "humidity-1")?.driver == "si7020")
        #expect(pi4.sensor(named: "humidity-1")?.address == 0x40)
    }

    @Test func theSimulatedBoardHasEveryKindOfHardware() throws {
        let sim = try shippedBoard("sim")
        #expect(sim.seed == 42)
        #expect(sim.pins.contains { $0.direction == .output && $0.use == "relay" })
        #expect(sim.pin(named: "dimmer-relay") != nil)
        #expect(sim.pins.contains { $0.direction == .input && $0.use == "wall-switch" })
        #expect(sim.pwmChannel(named: "dimmer-1") != nil)
        #expect(sim.sensor(named: "humidity-1")?.registers == [0xe5: 0x7c80, 0xe3: 0x6680])
    }

    @Test func theHILBoardReadsAsIs() throws {
        let board = try shippedBoard("qemu-gpio-sim")
        #expect(board.gpioChips.map(\.label) == ["hearth-sim-main", "hearth-sim-aux"])
        #expect(board.pin(named: "aux-button")?.offset == 7)
        #expect(board.pin(named: "aux-button")?.chipLabel == "hearth-sim-aux")
        #expect(board.sensors.map(\.name) == ["humidity-1", "power-1"])
        #expect(board.sensor(named: "power-1")?.registers == [0x02: 0x5dc0, 0x03: 0x012c, 0x04: 0x01f4])
        #expect(board.pwmChannels.isEmpty)
    }

    @Test func thePiBoardsNameTheirPowerMonitorAndTheir1WirePin() throws {
        for name in ["rpi4", "rpi5", "rpi-zero-2w"] {
            let board = try shippedBoard(name)
            #expect(board.sensor(named: "power-1")?.driver == "ina219", "\(name)")
            #expect(board.sensor(named: "power-1")?.address == 0x41, "\(name): beside the humidity chip at 0x40")
            #expect(board.oneWire?.gpio == 4, "\(name)")
            #expect(board.oneWire?.overlay == "dtoverlay=w1-gpio", "\(name)")
            #expect(!board.pins.contains { $0.offset == 4 }, "\(name): GPIO4 is the 1-Wire bus's, no binding's")
        }
    }

    @Test func everyProblemIsReportedWithItsLineAndPath() {
        let (board, problems) = parseBoard("""
            name: broken
            colour: red
            gpio:
              chips:
                - label: main
                  lines: 4
                  named:
                    - offset: 9
                      name: far-away
                    - offset: 1
                      name: relay-1
                      direction: sideways
                    - offset: 2
                      name: relay-1
            i2c:
              buses:
                - bus: 1
                  devices:
                    - name: h
                      driver: dht99
                      address: 0x90
            pwm:
              chips:
                - chip: 0
                  channels:
                    - channel: 0
                      name: relay-1
            seed: 3
            """)
        #expect(board == nil)
        let text = problems.map(\.description)
        #expect(
            text.contains(
                "board.yaml:2:1: colour: unknown key 'colour'; allowed: name, description, arch, simulated, seed, "
                    + "gpio, i2c, pwm, w1"))
        #expect(
            text.contains("board.yaml:8:19: gpio.chips[0].named[0].offset: offset 9 is beyond the chip's 4 lines (0…3)")
        )
        #expect(
            text.contains(
                "board.yaml:12:22: gpio.chips[0].named[1].direction: expected one of input, output, found 'sideways'"))
        #expect(
            text.contains(
                "board.yaml:14:17: gpio.chips[0].named[2].name: the name 'relay-1' is already used by a GPIO line on "
                    + "line 11; names on a board must be unique"))
        #expect(
            text.contains { $0.hasPrefix("board.yaml:21:20: i2c.buses[0].devices[0].address: 144 is out of range") })
        #expect(
            text.contains {
                $0.hasPrefix("board.yaml:20:19: i2c.buses[0].devices[0].driver: unknown sensor driver 'dht99'; known: ")
            })
        #expect(
            text.contains(
                "board.yaml:27:17: pwm.chips[0].channels[0].name: the name 'relay-1' is already used by a GPIO line on "
                    + "line 11; names on a board must be unique"))
        #expect(text.contains("board.yaml:28:7: seed: 'seed' only applies to a simulated board (simulated: true)"))
        #expect(problems.count == 8, "\(text)")
    }

    @Test func aMissingFileIsAProblemNotACrash() {
        let diagnostics = ConfigDiagnostics()
        #expect(Board.load(file: "/nonexistent/board.yaml", diagnostics: diagnostics) == nil)
        #expect(
            diagnostics.problems.first?.description.hasPrefix("/nonexistent/board.yaml: cannot read the file") == true)
    }
}
