import HearthConfig
@testable import HearthHub
import Testing

@Suite struct MatterSettingsTests {
    func read(_ matter: String) -> (MatterSettings?, [String]) {
        let yaml = "hub: {id: attic, board: /dev/null}\ndevices: []\n" + matter
        let d = ConfigDiagnostics()
        guard let root = ConfigValue.parse(yaml, file: "hearth.yaml", diagnostics: d) else {
            return (nil, d.problems.map(\.description))
        }
        let c = HubConfiguration.read(root, diagnostics: d)
        return (c?.matter, d.problems.map(\.description).filter { !$0.contains("board") })
    }

    @Test func withoutASectionTheBoardDecides() throws {
        let settings = try #require(read("").0)
        #expect(settings == MatterSettings())
        #expect(settings.isEnabled(simulatedBoard: false))
        #expect(!settings.isEnabled(simulatedBoard: true))
        #expect(settings.port == 5540)
    }

    @Test func everyKeyReads() throws {
        let (settings, problems) = read("""
        matter: {enabled: true, port: 5541, interfaces: [eth0, wlan0], discriminator: 3840, passcode: 20202021}
        """)
        #expect(problems == [])
        let s = try #require(settings)
        #expect(s.isEnabled(simulatedBoard: true))
        #expect(s.port == 5541)
        #expect(s.interfaces == ["eth0", "wlan0"])
        #expect(s.discriminator == 3840)
        #expect(s.passcode == 20202021)
    }

    @Test(arguments: [
        ("matter: {passcode: 12345678}", "a passcode Matter forbids"),
        ("matter: {passcode: 11111111}", "a passcode Matter forbids"),
        ("matter: {passcode: 100000000}", "passcode"),
        ("matter: {discriminator: 4096}", "discriminator"),
        ("matter: {port: 0}", "port"),
        ("matter: {interfaces: [\"\"]}", "an interface name is not empty"),
        ("matter: {pairing: yes}", "pairing"),
        ("matter: {bridge: house}", "bridge"),
        ("matter: {bridge: true}", "bridge"),
        ("matter: {bridge: [home]}", "bridge"),
    ])
    func badValuesAreRefusedAtTheirKey(yaml: String, expected: String) {
        let (settings, problems) = read(yaml)
        #expect(settings == nil)
        #expect(problems.count == 1)
        #expect(problems.first?.contains(expected) == true, "\(problems)")
        #expect(problems.first?.contains("hearth.yaml:3:") == true, "\(problems)")
    }

    @Test func theBridgeShowsTheHubUnlessToldTheHome() throws {
        #expect(try #require(read("").0).bridge == .hub)
        #expect(try #require(read("matter: {bridge: hub}").0).bridge == .hub)
        let (settings, problems) = read("matter: {enabled: true, bridge: home}")
        #expect(problems == [])
        #expect(try #require(settings).bridge == .home)
    }
}
