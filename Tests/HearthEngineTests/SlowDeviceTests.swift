import Dispatch
import HearthEngine
import HearthModel
import HearthTestKit
import Testing
import HearthSync

/// The engine's lock is never held across a hardware write: a device whose hardware hangs holds up only itself,
/// and what it was asked stays all-or-nothing. Each "hang" is a latch the test holds shut, so nothing here waits
/// for a guessed duration.
@Suite(.timeLimit(.minutes(1))) struct SlowDeviceTests {
    let slow = BlockingActuator()
    let fast = RecordingActuator()
    let clock = ManualClock()
    let home: Home

    init() throws {
        home = try Home(devices: [
            DeviceConfiguration(id: "stuck", name: "Stuck",
                                types: [DeviceTypeConfiguration(.dimmableLight, actuator: slow)]),
            DeviceConfiguration(id: "lamp", name: "Lamp",
                                types: [DeviceTypeConfiguration(.dimmableLight, actuator: fast)]),
        ], clock: clock)
    }

    func onOff(_ id: String) throws -> Value? {
        try home.device(id).types[0].traits.first { $0.descriptor.id == .onOff }?.attributes
            .first { $0.descriptor.name == "onOff" }?.value
    }

    func level(_ id: String) throws -> Value? {
        try home.device(id).types[0].traits.first { $0.descriptor.id == .levelControl }?.attributes
            .first { $0.descriptor.name == "currentLevel" }?.value
    }

    /// A command running on another thread: its end and its error.
    final class Call: Sendable {
        let done = DispatchSemaphore(value: 0)
        let error = Locked<HomeError?>(nil)
        func finished() -> Bool { done.wait(timeout: .now() + 15) == .success }
        var result: HomeError? { error.withLock { $0 } }
    }

    /// Starts `command` on the stuck device from another thread and waits until its hardware write hangs in `latch`.
    func hang(_ latch: Latch, _ trait: String, _ command: String, _ arguments: [String: Value] = [:]) -> Call {
        let call = Call()
        DispatchQueue.global().async { [home] in
            do throws(HomeError) {
                try home.invoke("stuck", trait: trait, command: command, arguments: arguments)
            } catch {
                call.error.withLock { $0 = error }
            }
            call.done.signal()
        }
        #expect(latch.waitForArrival())
        return call
    }

    @Test func aHungWriteHoldsUpOnlyItsOwnDevice() throws {
        let latch = slow.hold()
        let call = hang(latch, "onOff", "on")
        // The stuck device's write is in flight: every other device works, and reads see the state before it.
        try home.invoke("lamp", trait: "onOff", command: "on")
        try home.update("lamp", trait: "levelControl", attributes: ["onLevel": .int(100)])
        #expect(try onOff("lamp") == .bool(true))
        #expect(try onOff("stuck") == .bool(false))
        #expect(home.list().count == 2)
        latch.open()
        #expect(call.finished())
        #expect(call.result == nil)
        #expect(try onOff("stuck") == .bool(true))
        #expect(slow.outputs.last?.isLit == true)
    }

    @Test func aHungWriteThatFailsLeavesTheStateAsItWas() throws {
        slow.fail(true)
        let events = EventLog(home)
        let latch = slow.hold()
        let call = hang(latch, "onOff", "on")
        latch.open()
        #expect(call.finished())
        #expect(call.result?.status == .failure)
        #expect(try onOff("stuck") == .bool(false))
        #expect(events.all.isEmpty)
    }

    @Test func timersOfADeviceWaitForItsWriteWhileOtherDevicesKeepStepping() throws {
        for id in ["stuck", "lamp"] {
            try home.invoke(id, trait: "onOff", command: "on")
            try home.invoke(id, trait: "levelControl", command: "moveToLevel",
                            arguments: ["level": .int(4), "transitionTime": .int(10)])
        }
        clock.advance(by: 100)
        home.advance(to: clock.now)
        home.drainLanes()
        // The stuck device's next write hangs: an identify, while both fades go on.
        let latch = slow.hold()
        let call = hang(latch, "identify", "identify", ["identifyTime": .int(5)])
        let stuckBefore = try level("stuck"), lampBefore = try level("lamp")
        let lampWrites = fast.outputs.count
        clock.advance(by: 100)
        home.advance(to: clock.now)
        home.drainLanes()
        #expect(try level("lamp") != lampBefore)
        #expect(fast.outputs.count > lampWrites)
        #expect(try level("stuck") == stuckBefore)  // its step waits for the write's commit
        latch.open()
        #expect(call.finished())
        // Committed, the held-back step is due again and runs at the next wake.
        #expect(home.nextDeadline.map { $0 <= clock.now } == true)
        home.advance(to: clock.now)
        home.drainLanes()
        #expect(try level("stuck") != stuckBefore)
        #expect(slow.outputs.last?.level == (try level("stuck"))?.intValue.map(UInt8.init))
    }
}
