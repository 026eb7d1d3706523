#if canImport(Glibc)
import Glibc
#endif

/// The `web:` section: whether and where the hub serves its own page (`docs/web-api.md`). Read here, with the rest of
/// the configuration, so that `check-config` and the schema know it; served by HearthWeb.
public struct WebSettings: Sendable, Equatable {
    /// 8470: not the port of any common hub software (8080 and 8000 are taken by many web tools, 8123 by Home
    /// Assistant, 1880 by Node-RED, 8081 by Zigbee2MQTT's examples, 6052 by ESPHome's dashboard), so a board that
    /// runs one of them beside hearthd starts without a clash.
    public static let defaultPort = 8470

    public var enabled = true
    /// An IPv4 or IPv6 address to bind.
    public var listen = "0.0.0.0"
    public var port = WebSettings.defaultPort

    public init(enabled: Bool = true, listen: String = "0.0.0.0", port: Int = WebSettings.defaultPort) {
        self.enabled = enabled
        self.listen = listen
        self.port = port
    }

    /// Whether `text` is a numeric IPv4 or IPv6 address (no name: the hub binds before any resolver is trusted).
    public static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
