import HearthTestKit
import Testing
@testable import HearthLinux

@Suite("IIO devices over a sysfs tree")
struct IIODeviceTests {
    let tree: SysfsTree
    let root: SysfsRoot

    init() throws {
        tree = try SysfsTree()
        root = SysfsRoot(tree.root)
    }

    @Test func findsADeviceByNameAndPrefersTheProcessedValue() throws {
        try tree.addIIODevice(0, name: "bmp280", attributes: ["in_temp_input": "21000"])
        try tree.addIIODevice(2, name: "si7020", attributes: [
            "in_humidityrelative_input": "45230",
            "in_humidityrelative_raw": "1",  // ignored: _input wins
        ])
        let device = try IIODevice(named: "si7020", root: root)
        #expect(device.path == tree.path("/sys/bus/iio/devices/iio:device2"))
        #expect(device.name == "si7020")
        #expect(try device.read(.humidityRelative) == 45_230)
    }

    @Test func rawPlusOffsetTimesScale() throws {
        // si7020-style: the driver exports raw counts with a scale and a (negative) offset.
        try tree.addIIODevice(0, name: "si7020", attributes: [
            "in_temp_raw": "6500", "in_temp_offset": "-4000", "in_temp_scale": "10.5",
            "in_humidityrelative_raw": "2000", "in_humidityrelative_offset": "-786.432",
            "in_humidityrelative_scale": "30.517578125",
        ])
        let device = try IIODevice(named: "si7020", root: root)
        #expect(try device.read(.temperature) == (6500 - 4000) * 10.5)
        #expect(try device.read(.humidityRelative) == (2000 - 786.432) * 30.517578125)
    }

    @Test func missingOffsetIsZeroAndMissingScaleIsOne() throws {
        try tree.addIIODevice(0, name: "a", attributes: ["in_temp_raw": "250", "in_temp_scale": "4"])
        try tree.addIIODevice(1, name: "b", attributes: ["in_temp_raw": "250", "in_temp_offset": "10"])
        try tree.addIIODevice(2, name: "c", attributes: ["in_temp_raw": "-250"])
        #expect(try IIODevice(named: "a", root: root).read(.temperature) == 1_000)
        #expect(try IIODevice(named: "b", root: root).read(.temperature) == 260)
        #expect(try IIODevice(named: "c", root: root).read(.temperature) == -250)
    }

    @Test func indexedChannelUsesTheScaleSharedByItsType() throws {
        try tree.addIIODevice(0, name: "multi", attributes: ["in_temp0_raw": "100", "in_temp_scale": "0.5",
                                                             "in_temp1_raw": "100", "in_temp1_scale": "2"])
        let device = try IIODevice(named: "multi", root: root)
        #expect(try device.read(IIOChannel(rawValue: "temp0")) == 50)
        #expect(try device.read(IIOChannel(rawValue: "temp1")) == 200)
    }

    @Test func missingChannelIsENOENTListingWhatExists() throws {
        try tree.addIIODevice(0, name: "bmp280", attributes: ["in_temp_input": "21000", "in_pressure_raw": "1"])
        let device = try IIODevice(named: "bmp280", root: root)
        let error = #expect(throws: LinuxIOError.self) { try device.read(.humidityRelative) }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.message.contains("no 'humidityrelative' channel") == true)
        #expect(error?.message.contains("pressure, temp") == true)
    }

    @Test func unknownNameIsENOENTListingTheDevicesFound() throws {
        try tree.addIIODevice(0, name: "bmp280", attributes: [:])
        let error = #expect(throws: LinuxIOError.self) { try IIODevice(named: "si7020", root: root) }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.message.contains("iio:device0 'bmp280'") == true)
    }

    @Test func noIIOSubsystemIsENOENT() throws {
        let error = #expect(throws: LinuxIOError.self) { try IIODevice(named: "si7020", root: root) }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.message.contains("does not exist") == true)
    }

    @Test func openByPath() throws {
        let path = try tree.addIIODevice(4, name: "si7020", attributes: ["in_temp_input": "-1500"])
        let device = try IIODevice(path: path)
        #expect(device.name == "si7020")
        #expect(try device.read(.temperature) == -1_500)
        let error = #expect(throws: LinuxIOError.self) {
            try IIODevice(path: tree.path("/sys/bus/iio/devices/iio:device9"))
        }
        #expect(error?.errno == .noSuchFileOrDirectory)
    }

    @Test func sensorThatStoppedAnsweringIsEIO() throws {
        try tree.addIIODevice(0, name: "si7020", attributes: [:])
        // The first page of /proc/self/mem is never mapped: reading it fails with EIO, like a dead I²C sensor.
        try tree.symlink("/sys/devices/platform/hearth-iio.0/iio:device0/in_humidityrelative_raw", to: "/proc/self/mem")
        let device = try IIODevice(named: "si7020", root: root)
        let error = #expect(throws: LinuxIOError.self) { try device.read(.humidityRelative) }
        #expect(error?.errno == .ioError)
        #expect(error?.operation == "read")
        #expect(error?.message.contains("did not answer") == true)
        #expect(error?.description.contains("EIO (Input/output error)") == true)
    }

    @Test func unreadableAttributeCarriesItsErrno() throws {
        try tree.addIIODevice(0, name: "si7020", attributes: [:])
        try tree.directory("/sys/devices/platform/hearth-iio.0/iio:device0/in_temp_input")
        let device = try IIODevice(named: "si7020", root: root)
        let error = #expect(throws: LinuxIOError.self) { try device.read(.temperature) }
        #expect(error?.errno == .isADirectory)
        #expect(error?.context == .path(device.path + "/in_temp_input"))
    }

    @Test func garbageIsEINVAL() throws {
        try tree.addIIODevice(0, name: "si7020", attributes: ["in_temp_raw": "12", "in_temp_scale": "n/a"])
        let error = #expect(throws: LinuxIOError.self) { try IIODevice(named: "si7020", root: root).read(.temperature) }
        #expect(error?.errno == .invalidArgument)
    }
}

@Suite("hwmon devices over a sysfs tree")
struct HwmonDeviceTests {
    let tree: SysfsTree
    let root: SysfsRoot

    init() throws {
        tree = try SysfsTree()
        root = SysfsRoot(tree.root)
    }

    @Test func readsHumidityAndTemperatureByName() throws {
        try tree.addHwmon(0, name: "cpu_thermal", attributes: ["temp1_input": "48000"])
        try tree.addHwmon(10, name: "sht3x", attributes: ["humidity1_input": "51234", "temp1_input": "-2500"])
        try tree.addHwmon(2, name: "sht3x", attributes: ["humidity1_input": "40000", "temp1_input": "22000"])
        let device = try HwmonDevice(named: "sht3x", root: root)
        // hwmon2 sorts before hwmon10 numerically, not as text.
        #expect(device.path == tree.path("/sys/class/hwmon/hwmon2"))
        #expect(try device.relativeHumidity() == 40_000)
        #expect(try device.temperature() == 22_000)
        #expect(try HwmonDevice(path: tree.path("/sys/class/hwmon/hwmon10")).read(.temp1Input) == -2_500)
    }

    @Test func nameMayLiveUnderDevice() throws {
        try tree.file("/sys/devices/virtual/hwmon/hwmon0/device/name", "aht20\n")
        try tree.file("/sys/devices/virtual/hwmon/hwmon0/temp1_input", "19500\n")
        try tree.symlink("/sys/class/hwmon/hwmon0", to: "../../devices/virtual/hwmon/hwmon0")
        #expect(try HwmonDevice(named: "aht20", root: root).temperature() == 19_500)
    }

    @Test func missingAttributeIsENOENT() throws {
        try tree.addHwmon(0, name: "cpu_thermal", attributes: ["temp1_input": "48000"])
        let device = try HwmonDevice(named: "cpu_thermal", root: root)
        let error = #expect(throws: LinuxIOError.self) { try device.relativeHumidity() }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.message.contains("no humidity1_input") == true)
    }

    @Test func unknownNameIsENOENT() throws {
        try tree.addHwmon(0, name: "cpu_thermal", attributes: [:])
        let error = #expect(throws: LinuxIOError.self) { try HwmonDevice(named: "sht3x", root: root) }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.message.contains("hwmon0 'cpu_thermal'") == true)
    }

    @Test func sensorThatStoppedAnsweringIsEIO() throws {
        try tree.addHwmon(0, name: "sht3x", attributes: [:])
        try tree.symlink("/sys/devices/virtual/hwmon/hwmon0/humidity1_input", to: "/proc/self/mem")
        let error = #expect(throws: LinuxIOError.self) {
            try HwmonDevice(named: "sht3x", root: root).relativeHumidity()
        }
        #expect(error?.errno == .ioError)
    }
}

@Suite("file I/O funnel")
struct FileIOTests {
    @Test func writeNeverCreatesAMissingAttribute() throws {
        let tree = try SysfsTree()
        let error = #expect(throws: LinuxIOError.self) { try FileIO.write("1", to: tree.path("/sys/enable")) }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.operation == "open")
        #expect(!tree.exists("/sys/enable"))
    }

    @Test func readsFilesLargerThanOneChunk() throws {
        let tree = try SysfsTree()
        let big = String(repeating: "0123456789", count: 1_000)
        try tree.file("/big", big)
        #expect(try FileIO.read(tree.path("/big")) == big)
    }

    @Test func trimsSysfsWhitespace() {
        #expect(FileIO.trimmed("  42\n") == "42")
        #expect(FileIO.trimmed("\n") == "")
        #expect(FileIO.trimmed("normal") == "normal")
    }

    @Test func rootPrefixJoinsPaths() {
        #expect(SysfsRoot.system.path("/sys/class/pwm") == "/sys/class/pwm")
        #expect(SysfsRoot("/tmp/x/").path("/sys/class/pwm") == "/tmp/x/sys/class/pwm")
    }

    @Test func errorDescriptionCarriesOperationContextErrnoAndHint() {
        let error = LinuxIOError(operation: "open", context: .path("/sys/class/pwm/pwmchip0/export"),
                                 errno: .permissionDenied)
        #expect(error.errno.symbol == "EACCES")
        #expect(error.errno.text == "Permission denied")
        #expect(error.message.contains("run hearthd as root"))
        #expect(error.description.contains("[open on /sys/class/pwm/pwmchip0/export: EACCES (Permission denied)]"))
        #expect(LinuxErrno(rawValue: 9_999).description.contains("errno 9999"))
    }
}
