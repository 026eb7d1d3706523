import HearthEngine
import HearthModel
import HearthSync

/// A relay (or any on/off load) on a GPIO output: renders `EndpointOutput.isLit`, so Identify blinks it.
///
/// Requested in the home's start-up state so it never glitches; released in its safe state on stop. A chip that is
/// missing, a line someone else holds or a write that fails takes `onOff` offline and is retried with backoff.
final class RelayBinding: RetryingOutputBinding, EndpointActuator {
    let configuration: RelayConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime

    private struct State {
        var line: (any OutputLine)?
        /// What the line was last told, so an unchanged output (Identify ending on an off light) writes nothing.
        var value = false
        var started = false
        var retry = FaultRetry()
    }
    private let state = Locked(State())

    var wiring: String { configuration.wiring }

    init(_ configuration: RelayConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        runtime = BindingRuntime(context: context, kind: "relay", traits: [.onOff])
    }

    var actuator: (any EndpointActuator)? { self }

    // MARK: EndpointActuator

    func drive(_ output: EndpointOutput) throws(HomeError) {
        let lit = output.isLit
        try state.withLock { (s) throws(HomeError) in
            guard let line = s.line else {
                // Before start the home is only settling its start-up state: the request will carry it.
                guard s.started else { return }
                throw .unavailable("the relay on \(configuration.pin) is not available: "
                                   + (runtime.offlineReason ?? s.retry.pendingFault ?? "it is being re-requested"))
            }
            guard lit != s.value else { return }
            do throws(HardwareError) {
                try line.set(lit)
                s.value = lit
            } catch {
                try? line.release(leaving: configuration.safeState)
                s.line = nil
                s.retry.record("setting the relay failed: \(error.message)")
                runtime.wake()
                throw .hardware("relay \(configuration.pin): \(error.message)")
            }
        }
    }

    // MARK: Lifecycle

    func withRetry<R: Sendable>(_ body: (inout FaultRetry) -> R) -> R { state.withLock { body(&$0.retry) } }
    func markStarted() { state.withLock { $0.started = true } }

    func stop() {
        runtime.markStopped()
        let line = state.withLock { s -> (any OutputLine)? in
            defer { s.line = nil; s.retry.cancel() }
            return s.line
        }
        do throws(HardwareError) {
            try line?.release(leaving: configuration.safeState)
        } catch {
            runtime.log("releasing \(configuration.pin) in its safe state failed: \(error.message)")
        }
        runtime.wake()
    }

    /// Reads the line back: on a chip that went away (unbound, unplugged) the kernel answers ENODEV.
    func probe() -> String? {
        state.withLock { s -> String? in
            guard let line = s.line else { return nil }
            do throws(HardwareError) {
                _ = try line.value()
                return nil
            } catch {
                try? line.release(leaving: configuration.safeState)
                s.line = nil
                return "the relay's line stopped answering: \(error.message)"
            }
        }
    }

    /// Requests the line at the value the home renders now; on failure goes offline and schedules a retry.
    func acquire(at now: EngineInstant) {
        guard let home = runtime.home, !runtime.isStopped else { return }
        let desired: Bool
        do throws(HomeError) {
            desired = try home.output(runtime.deviceID, type: runtime.typeName).isLit
        } catch {
            runtime.log("cannot read the start-up state: \(error.message)")
            return
        }
        let opened: Result<any OutputLine, HardwareError>
        do throws(HardwareError) {
            opened = .success(try hardware.openOutput(configuration.pin, initialValue: desired,
                                                      activeLow: configuration.activeLow, drive: configuration.drive))
        } catch {
            opened = .failure(error)
        }
        switch opened {
        case .failure(let error):
            state.withLock { $0.retry.failed(at: now) }
            runtime.goOffline("requesting \(configuration.pin) failed: \(error.message)")
        case .success(let line):
            // A command may have changed the output between reading it and requesting the line.
            let accepted = state.withLock { s -> Bool in
                guard !runtime.isStopped else { return false }
                s.line = line
                s.value = desired
                s.retry.succeeded(probingAt: runtime.firstProbe(after: now))
                return true
            }
            guard accepted else {
                try? line.release(leaving: configuration.safeState)
                return
            }
            if let now = try? home.output(runtime.deviceID, type: runtime.typeName).isLit, now != desired {
                try? drive(EndpointOutput(onOff: now))
            }
            runtime.goOnline()
        }
    }
}
