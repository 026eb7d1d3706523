import HearthEngine

/// What becomes of one reading: the plausibility checks, the median, the delta threshold and the throttle, as a
/// value type on explicit instants (no I/O, no clock), so every rule is tested step by step.
struct SensorFilter: Sendable {
    enum Outcome: Sendable, Hashable {
        /// Publish this value (Matter units: 0.01 %RH / 0.01 °C).
        case publish(Int)
        /// Plausible, but not worth publishing yet (below the delta threshold, or throttled).
        case hold
        /// Implausible: dropped and never published; the reason says why.
        case drop(String)
    }

    let configuration: SensorConfiguration
    private(set) var window: [Double] = []
    private(set) var lastAccepted: (value: Double, at: EngineInstant)?
    private(set) var lastPublished: (value: Int, at: EngineInstant)?

    init(_ configuration: SensorConfiguration) { self.configuration = configuration }

    /// Milli-units to Matter's hundredths.
    static func matterUnits(_ milli: Double) -> Int { Int((milli / 10).rounded()) }

    /// Takes a raw reading (milli-units) at `now`. `force` publishes a plausible reading regardless of the delta
    /// threshold and the throttle (a client's `get`).
    mutating func take(_ raw: Double, at now: EngineInstant, force: Bool = false) -> Outcome {
        let unit = configuration.quantity == .humidity ? "%RH" : "°C"
        guard raw.isFinite else { return .drop("the sensor returned \(raw)") }
        guard configuration.plausible.contains(raw) else {
            return .drop(
                "\(format(raw)) \(unit) is outside the sensor's range "
                    + "\(format(configuration.plausible.lowerBound))…\(format(configuration.plausible.upperBound)) "
                        + "\(unit)")
        }
        if let maxRate = configuration.maxRate, let last = lastAccepted {
            let minutes = Double(max(now - last.at, configuration.interval)) / 60_000
            let change = abs(raw - last.value)
            if change > maxRate * minutes {
                return .drop("a jump of \(format(change)) \(unit) in \(format(minutes * 60_000))s exceeds maxRate "
                             + "\(format(maxRate)) \(unit) per minute")
            }
        }
        lastAccepted = (raw, now)
        window.append(raw)
        if window.count > configuration.median { window.removeFirst(window.count - configuration.median) }
        let value = Self.matterUnits(Self.median(window))
        if !force, let published = lastPublished {
            if Double(abs(value - published.value)) * 10 < configuration.deltaThreshold { return .hold }
            if value == published.value { return .hold }
            if now - published.at < configuration.throttle { return .hold }
        }
        lastPublished = (value, now)
        return .publish(value)
    }

    /// Forgets everything (the sensor went stale: what comes back starts afresh).
    mutating func reset() {
        window = []
        lastAccepted = nil
        lastPublished = nil
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    private func format(_ milli: Double) -> String {
        let hundredths = Int((milli / 10).rounded())
        let sign = hundredths < 0 ? "-" : ""
        let a = abs(hundredths)
        let cents = a % 100
        return "\(sign)\(a / 100).\(cents < 10 ? "0" : "")\(cents)"
    }
}
