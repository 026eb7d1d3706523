import HearthEngine
import HearthModel
import HearthSync

/// A fan on a PWM channel: Fan Control's PercentCurrent as duty (`PWMFanConfiguration.dutyCycle`).
///
/// Requested dark and then set to the home's start-up speed; stopped (duty 0, disabled) on stop. A channel that goes
/// away takes `fanControl` offline and is re-requested with backoff, as a dimmer's is.
final class PWMFanBinding: RetryingOutputBinding, EndpointActuator {
    let configuration: PWMFanConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime

    private struct State {
        var pwm: (any PWMOutput)?
        var duty: UInt64 = 0
        var started = false
        var retry = FaultRetry()
    }
    private let state = Locked(State())

    var wiring: String { configuration.wiring }

    init(_ configuration: PWMFanConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        runtime = BindingRuntime(context: context, kind: "pwmFan", traits: [.fanControl])
    }

    var actuator: (any EndpointActuator)? { self }

    func dutyCycle(for output: EndpointOutput) -> UInt64 {
        configuration.dutyCycle(percent: Int(output.fanPercent ?? 0))
    }

    func drive(_ output: EndpointOutput) throws(HomeError) {
        let duty = dutyCycle(for: output)
        let now = runtime.home?.clock.now
        try state.withLock { (s) throws(HomeError) in
            guard let pwm = s.pwm else {
                guard s.started else { return }
                throw .unavailable("the fan on \(configuration.pwm) is not available: "
                                   + (runtime.offlineReason ?? s.retry.pendingFault ?? "it is being re-requested"))
            }
            guard duty != s.duty else { return }
            do throws(HardwareError) {
                try pwm.setDutyCycle(duty)
                s.duty = duty
                if let now { s.retry.answered(at: now) }
            } catch {
                try? pwm.stop()
                s.pwm = nil
                s.retry.record("setting the fan's duty failed: \(error.message)")
                runtime.wake()
                throw .hardware("fan \(configuration.pwm): \(error.message)")
            }
        }
    }

    func withRetry<R: Sendable>(_ body: (inout FaultRetry) -> R) -> R { state.withLock { body(&$0.retry) } }
    func markStarted() { state.withLock { $0.started = true } }

    func stop() {
        runtime.markStopped()
        let pwm = state.withLock { s -> (any PWMOutput)? in
            defer { s.pwm = nil; s.retry.cancel() }
            return s.pwm
        }
        do throws(HardwareError) { try pwm?.stop() } catch {
            runtime.log("stopping \(configuration.pwm) failed: \(error.message)")
        }
        runtime.wake()
    }

    /// Writes the duty it has again: a PWM chip that went away fails the write.
    func probe() -> String? {
        state.withLock { s -> String? in
            guard let pwm = s.pwm else { return nil }
            do throws(HardwareError) {
                try pwm.setDutyCycle(s.duty)
                return nil
            } catch {
                try? pwm.stop()
                s.pwm = nil
                return "the fan's PWM channel stopped answering: \(error.message)"
            }
        }
    }

    func acquire(at now: EngineInstant) {
        guard let home = runtime.home, !runtime.isStopped else { return }
        guard let output = try? home.output(runtime.deviceID, type: runtime.typeName) else { return }
        let duty = dutyCycle(for: output)
        var pwm: (any PWMOutput)?
        do throws(HardwareError) {
            let channel = try hardware.openPWM(configuration.pwm)
            pwm = channel
            try channel.start(periodNanoseconds: configuration.periodNanoseconds, dutyCycleNanoseconds: duty,
                              polarity: configuration.polarity)
        } catch {
            try? pwm?.stop()
            state.withLock { $0.retry.failed(at: now) }
            runtime.goOffline("requesting the fan's PWM channel failed: \(error.message)")
            return
        }
        let accepted = state.withLock { s -> Bool in
            guard !runtime.isStopped else { return false }
            s.pwm = pwm
            s.duty = duty
            s.retry.succeeded(probingAt: runtime.firstProbe(after: now))
            return true
        }
        guard accepted else {
            try? pwm?.stop()
            return
        }
        if let latest = try? home.output(runtime.deviceID, type: runtime.typeName), latest != output {
            try? drive(latest)
        }
        runtime.goOnline()
    }
}
