import HearthConfig
import HearthModel

/// `binding: {kind: relayCover, up: blind-up, down: blind-down, openTime: 25s, closeTime: 24s, reversePause: 500ms}`:
/// a blind, shade or shutter whose motor two relays run, one per direction (a tubular motor's two phases).
///
/// | key | default | meaning |
/// |---|---|---|
/// | `up`, `down` | — | the board pins of the relays that run the motor up (open) and down (close) |
/// | `activeLow` | `false` | the relays are energised by a low wire |
/// | `openTime` | — | how long the covering takes from fully closed to fully open |
/// | `closeTime` | `openTime` | from fully open to fully closed |
/// | `reversePause` | `500ms` | both relays off for this long before the motor turns the other way |
/// | `endOverrun` | a tenth of the travel time, at least 1 s | how much longer a move to an end runs, so it ends at the
/// end stop and the estimate is calibrated there | | `maxRunTime` | 1.5 × the longer travel time | the cut-off: no run
/// lasts longer (at least the longer travel time; it may cut an end's overrun short) | | `openStop`, `closedStop` |
/// none | input pins of end-stop switches, active while the covering is at that end | | `stopActiveLow` | `true` |
/// those switches pull their line low (to ground, with the pull-up on) |
struct CoverConfiguration: Sendable, Hashable {
    var up: PinAddress
    var down: PinAddress
    var activeLow = false
    /// Milliseconds.
    var openTime: Int64
    var closeTime: Int64
    var reversePause: Int64 = 500
    var endOverrun: Int64
    var maxRunTime: Int64
    var openStop: PinAddress?
    var closedStop: PinAddress?
    var stopActiveLow = true

    static let keys: [ConfigKey] = [
        ConfigKey("up", .text, required: true, "the board pin of the relay that runs the motor up (open)"),
        ConfigKey("down", .text, required: true, "the board pin of the relay that runs the motor down (close)"),
        ConfigKey("activeLow", .bool, "the relays are energised by a low wire; default false"),
        ConfigKey(
            "openTime", .duration(.milliseconds(500) ... .seconds(600), defaultUnit: "s"), required: true,
            "how long the covering takes from fully closed to fully open"),
        ConfigKey(
            "closeTime", .duration(.milliseconds(500) ... .seconds(600), defaultUnit: "s"),
            "from fully open to fully closed; default openTime"),
        ConfigKey(
            "reversePause", .duration(.milliseconds(100) ... .seconds(10), defaultUnit: "ms"),
            "both relays off this long before the motor turns the other way; default 500ms"),
        ConfigKey(
            "endOverrun", .duration(.zero ... .seconds(60), defaultUnit: "s"),
            "how much longer a move to an end runs, to calibrate there; default a tenth of the travel, at least 1s"),
        ConfigKey(
            "maxRunTime", .duration(.seconds(1) ... .seconds(900), defaultUnit: "s"),
            "the cut-off: no run lasts longer (at least the longer travel time); default 1.5 × the longer travel "
                + "time"),
        ConfigKey("openStop", .text, "the board pin (input) of an end-stop switch active while fully open"),
        ConfigKey("closedStop", .text, "the board pin (input) of an end-stop switch active while fully closed"),
        ConfigKey("stopActiveLow", .bool, "the end-stop switches pull their line low; default true"),
    ]

    static func read(_ reader: BindingReader) -> CoverConfiguration? {
        guard let map = reader.mapping() else { return nil }
        let up = reader.pin(map, key: "up", direction: .output, what: "cover's up relay", allowRaw: false)
        let down = reader.pin(map, key: "down", direction: .output, what: "cover's down relay", allowRaw: false)
        var failed = false
        func stop(_ key: String) -> PinAddress? {
            guard map[key] != nil else { return nil }
            let pin = reader.pin(map, key: key, direction: .input, what: "cover's end stop", allowRaw: false)
            if pin == nil { failed = true }
            return pin
        }
        let openStop = stop("openStop"), closedStop = stop("closedStop")
        guard let openTime = map.duration("openTime", required: true).map(BindingReader.milliseconds) else {
            return nil
        }
        let closeTime = map.duration("closeTime").map(BindingReader.milliseconds) ?? openTime
        let longer = max(openTime, closeTime)
        let overrun = map.duration("endOverrun").map(BindingReader.milliseconds) ?? max(1_000, longer / 10)
        let maxRunTime = map.duration("maxRunTime").map(BindingReader.milliseconds) ?? longer * 3 / 2
        if maxRunTime < longer, let value = map["maxRunTime"] {
            value.problem("maxRunTime (\(maxRunTime) ms) is shorter than the longer travel time (\(longer) ms): a move "
                          + "from one end to the other would be cut off before it gets there")
            return nil
        }
        guard let up, let down, !failed else { return nil }
        return CoverConfiguration(
            up: up, down: down, activeLow: map.bool("activeLow") ?? false, openTime: openTime, closeTime: closeTime,
            reversePause: map.duration("reversePause").map(BindingReader.milliseconds) ?? 500, endOverrun: overrun,
            maxRunTime: maxRunTime, openStop: openStop, closedStop: closedStop,
            stopActiveLow: map.bool("stopActiveLow") ?? true)
    }

    var wiring: String {
        "up \(up), down \(down)" + (activeLow ? ", active low" : "")
            + ", \(openTime) ms to open, \(closeTime) ms to close, \(reversePause) ms before reversing"
            + (openStop.map { ", open stop \($0)" } ?? "") + (closedStop.map { ", closed stop \($0)" } ?? "")
    }
}

extension BindingKind {
    static let relayCover = BindingKind(
        "relayCover", fits: [.windowCovering],
        help: "A blind or shutter motor on two interlocked relays, up and down, never both on (WindowCovering).",
        keys: CoverConfiguration.keys, rules: []
    ) { reader in
        CoverConfiguration.read(reader).map { CoverBinding($0, context: reader.context) }
    }
}
