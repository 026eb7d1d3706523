// What a running hub hands its web page for administration: the configuration file it was started with (checked and
// saved by `ConfigurationFile`), the one way to restart (`HubRestart`), and its recent log lines (`LogRing`).

public struct HubAdministration: Sendable {
    public let configuration: ConfigurationFile
    public let restart: HubRestart
    public let logs: LogRing

    public init(configuration: ConfigurationFile, restart: HubRestart, logs: LogRing) {
        self.configuration = configuration
        self.restart = restart
        self.logs = logs
    }
}
