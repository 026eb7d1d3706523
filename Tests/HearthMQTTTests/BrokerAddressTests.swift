import HearthMQTT
import Testing

/// The one reading of a broker address, shared by `hearth --broker` and `hearthd run --broker`.
@Suite struct BrokerAddressTests {
    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1", nil, nil),
        ("broker.local:1884", "broker.local", 1884, nil),
        ("[::1]:1883", "::1", 1883, nil),
        ("[fe80::1%eth0]", "fe80::1%eth0", nil, nil),
        ("mqtt://broker.local", "broker.local", nil, "mqtt"),
        ("mqtts://[2001:db8::5]:8884/", "2001:db8::5", 8884, "mqtts"),
        ("TCP://10.0.0.2:1883", "10.0.0.2", 1883, "tcp"),
    ] as [(String, String, Int?, String?)])
    func addressesAsMQTTToolsWriteThem(text: String, host: String, port: Int?, scheme: String?) throws {
        let address = try MQTTBrokerAddress(parsing: text)
        #expect(address.host == host)
        #expect(address.port == port)
        #expect(address.scheme == scheme)
    }

    @Test func defaultPortsAndTLS() throws {
        #expect(try MQTTBrokerAddress(parsing: "h").port(usingTLS: false) == 1883)
        #expect(try MQTTBrokerAddress(parsing: "h").port(usingTLS: true) == 8883)
        #expect(try MQTTBrokerAddress(parsing: "mqtts://h").usesTLS)
        #expect(try MQTTBrokerAddress(parsing: "ssl://h").usesTLS)
        #expect(try !MQTTBrokerAddress(parsing: "mqtt://h").usesTLS)
        #expect(try MQTTBrokerAddress(parsing: "h:1").port(usingTLS: true) == 1)
    }

    @Test func credentialsArePercentDecodedAndNeverShown() throws {
        let address = try MQTTBrokerAddress(parsing: "mqtt://hub%40home:p%3As%40ss@broker:1883")
        #expect(address.username == "hub@home")
        #expect(address.password == "p:s@ss")
        #expect(try MQTTBrokerAddress(parsing: "mqtt://only@broker").username == "only")
        #expect(try MQTTBrokerAddress(parsing: "mqtt://only@broker").password == nil)
        #expect(MQTTBrokerAddress.masked("mqtt://hub:s3cret@broker:1") == "mqtt://hub:***@broker:1")
        #expect(MQTTBrokerAddress.masked("broker:1") == "broker:1")
        let error = #expect(throws: MQTTBrokerAddress.SyntaxError.self) {
            try MQTTBrokerAddress(parsing: "mqtt://hub:s3cret@broker:99999")
        }
        #expect(error?.description == "broker 'mqtt://hub:***@broker:99999': the port must be a number in 1...65535")
    }

    @Test(arguments: [
        ("::1", "write an IPv6 address as [ADDRESS]:PORT"),
        ("[::1", "an IPv6 address needs a closing ']'"),
        ("[::1]1883", "expected ':PORT' after ']'"),
        (":1883", "the host is missing"),
        ("mqtt://", "the host is missing"),
        ("host:http", "the port must be a number in 1...65535"),
        ("host:0", "the port must be a number in 1...65535"),
        ("ws://host:9001", "'ws://' is not supported"),
        ("mqtt://host/topic", "a broker URL has no path"),
    ])
    func mistakesAreNamed(text: String, problem: String) {
        let error = #expect(throws: MQTTBrokerAddress.SyntaxError.self) { try MQTTBrokerAddress(parsing: text) }
        #expect(error?.problem.hasPrefix(problem) == true, "\(String(describing: error))")
    }
}
