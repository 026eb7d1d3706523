import HearthMQTT
import Testing

/// A deterministic random source for the jitter.
struct SequenceGenerator: RandomNumberGenerator {
    var values: [UInt64]
    var index = 0
    mutating func next() -> UInt64 {
        defer { index += 1 }
        return values[index % values.count]
    }
}

@Suite struct BackoffTests {
    let policy = MQTTBackoff(initialDelay: .milliseconds(100), maximumDelay: .seconds(5), multiplier: 2, jitter: 0.5)

    @Test func withoutRandomnessTheDelayDoublesUntilTheCap() {
        let delays = (0..<10).map { policy.delay(forAttempt: $0, random: 0) }
        #expect(delays == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
            .milliseconds(3200), .seconds(5), .seconds(5), .seconds(5), .seconds(5),
        ])
    }

    @Test func jitterTakesUpToItsFractionOffTheBase() {
        #expect(policy.delay(forAttempt: 3, random: 0.5) == .milliseconds(600))
        #expect(policy.delay(forAttempt: 3, random: 0.999_999) > .milliseconds(400))
        #expect(policy.delay(forAttempt: 3, random: 1) == .milliseconds(400))
        #expect(policy.delay(forAttempt: 20, random: 0.5) == .milliseconds(3750))
    }

    @Test func everyDelayStaysWithinTheJitterBand() {
        var generator = SystemRandomNumberGenerator()
        for attempt in 0..<40 {
            let base = min(0.1 * Double(1 << min(attempt, 30)), 5)
            let delay = policy.delay(forAttempt: attempt, using: &generator)
            #expect(delay >= .milliseconds(Int64((base * 500).rounded(.down))))
            #expect(delay <= .milliseconds(Int64((base * 1000).rounded(.up))))
        }
    }

    @Test func theInjectedGeneratorDrivesTheJitter() {
        var low = SequenceGenerator(values: [0])
        var high = SequenceGenerator(values: [UInt64.max])
        #expect(policy.delay(forAttempt: 0, using: &low) == .milliseconds(100))
        #expect(policy.delay(forAttempt: 0, using: &high) < .milliseconds(51))
        #expect(policy.delay(forAttempt: 0, using: &high) >= .milliseconds(50))
    }

    @Test func hugeAttemptCountsAndOddSettingsStayFinite() {
        #expect(policy.delay(forAttempt: Int.max, random: 0) == .seconds(5))
        #expect(policy.delay(forAttempt: -3, random: 0) == .milliseconds(100))
        let flat = MQTTBackoff(initialDelay: .seconds(1), maximumDelay: .seconds(10), multiplier: 0.5, jitter: 7)
        #expect(flat.delay(forAttempt: 4, random: 0) == .seconds(1))
        #expect(flat.delay(forAttempt: 4, random: 1) == .zero)
    }
}

@Suite struct ProtocolFallbackDecisionTests {
    @Test func aV5RefusalForTheProtocolVersionFallsBackTo311() {
        #expect(MQTTProtocolVersion.v5.fallback(afterRefusalWith: 0x84, error: nil) == .v311)
        #expect(MQTTProtocolVersion.v5.fallback(afterRefusalWith: 1, error: nil) == .v311)
    }

    @Test func aV311CONNACKThatAV5ParserFindsMalformedFallsBack() {
        #expect(MQTTProtocolVersion.v5.fallback(afterRefusalWith: nil, error: .malformedPacket) == .v311)
        #expect(MQTTProtocolVersion.v5.fallback(afterRefusalWith: nil, error: .protocolError) == .v311)
    }

    @Test func otherFailuresKeepTheVersion() {
        #expect(MQTTProtocolVersion.v5.fallback(afterRefusalWith: 0x86, error: nil) == nil)
        #expect(MQTTProtocolVersion.v5.fallback(afterRefusalWith: 0x87, error: nil) == nil)
        #expect(MQTTProtocolVersion.v5.fallback(afterRefusalWith: nil, error: .connectionLost) == nil)
        #expect(MQTTProtocolVersion.v5.fallback(afterRefusalWith: nil, error: .system) == nil)
        #expect(MQTTProtocolVersion.v311.fallback(afterRefusalWith: 1, error: nil) == nil)
        #expect(MQTTProtocolVersion.v311.fallback(afterRefusalWith: nil, error: .malformedPacket) == nil)
    }
}

@Suite struct ErrorTests {
    @Test func codesRoundTripThroughLibmosquittoValues() {
        for raw in Int32(-4)...31 {
            let code = MQTTError.Code(rawValue: raw)
            #expect(code.rawValue == raw)
            if raw != 0 { #expect(code != .unrecognized(raw)) }
        }
        #expect(MQTTError.Code(rawValue: 14) == .system)
        #expect(MQTTError.Code(rawValue: 5) == .connectionRefused)
        #expect(MQTTError.Code(rawValue: 999) == .unrecognized(999))
    }
}
