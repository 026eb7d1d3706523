// The values the hub's log view must never show, gathered where the hub reads them: every value of the `secrets.yaml`
// beside the configuration, the broker's password (however it was given), and the Matter pairing values (the passcode
// and the codes made from it). `LogRing.redact` takes them out of every line.
import HearthConfig
import HearthMQTT

extension Hub {
    /// The values of `secrets.yaml` beside `configFile` (none when it is missing or unreadable: then no `!secret`
    /// could have been read from it either).
    static func secretValues(besides configFile: String) -> [String] {
        let directory = configFile.lastIndex(of: "/").map { String(configFile[..<$0]) } ?? "."
        guard case .success(let bytes) = SecretFile.read((directory.isEmpty ? "" : directory) + "/secrets.yaml")
        else { return [] }
        guard let root = YAML.parse(bytes).root, case .mapping(let entries) = root.value else { return [] }
        return entries.compactMap { e in
            if case .scalar(let text, _) = e.value.value { return text }
            return nil
        }
    }

    /// Everything to take out of log lines for a hub run from `configFile` with these settings.
    static func secretsForLogs(configFile: String, mqtt: MQTTConnectOptions, matter: MatterPairing?) -> [String] {
        var out = secretValues(besides: configFile)
        if let password = mqtt.password { out.append(password) }
        if let matter {
            out += [
                String(matter.passcode), matter.manualCode, matter.manualCode.filter { $0 != "-" }, matter.qrPayload
            ]
        }
        return out
    }
}
