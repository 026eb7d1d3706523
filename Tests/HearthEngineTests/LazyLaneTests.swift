import Dispatch
import HearthEngine
import HearthModel
import HearthSync
import HearthTestKit
import Synchronization
import Testing

/// A device's lane is made on its first use (`DeviceLanes`), and what a device shares with others of its kind
/// (`Endpoint.Shape`, BasicInformation's defaults) is made once: these check that nothing of that shows.
@Suite(.timeLimit(.minutes(1))) struct LazyLaneTests {
    let home: Home

    final class Counters: Sendable {
        let inside = Atomic<Int>(0), overlapped = Atomic<Bool>(false), count = Atomic<Int>(0), refused = Atomic<Int>(0)
    }

    init() throws {
        home = try Home(devices: (0..<8).map { i in
            DeviceConfiguration(id: "d\(i)", name: "Light \(i)",
                                types: [DeviceTypeConfiguration(i % 2 == 0 ? .dimmableLight : .onOffLight)])
        }, clock: ManualClock())
    }

    /// Work queued on a lane nobody used yet runs, in order; draining lanes that were never made returns at once.
    @Test func aLaneWorksOnItsFirstUse() {
        home.drainLanes()  // no lane made yet
        let ran = Locked<[Int]>([])
        for k in 0..<5 { #expect(home.enqueue(on: "d3") { ran.withLock { $0.append(k) } }) }
        home.drainLanes()
        #expect(ran.withLock { $0 } == [0, 1, 2, 3, 4])
        #expect(home.enqueue(on: "nobody") {} == false)
    }

    /// Many threads using a device's lane for the first time at once get one lane: its work never overlaps and none
    /// is lost. The bounded form counts on the same lane.
    @Test func concurrentFirstUsesMakeOneLane() {
        for device in ["d0", "d5"] {
            let c = Counters()
            let gate = Latch()
            DispatchQueue.concurrentPerform(iterations: 64) { i in
                let work: @Sendable () -> Void = {
                    if c.inside.wrappingAdd(1, ordering: .sequentiallyConsistent).oldValue != 0 {
                        c.overlapped.store(true, ordering: .sequentiallyConsistent)
                    }
                    // The first piece holds the lane until every thread has queued its own, so they pile up behind it.
                    if i == 0 { gate.pass() }
                    c.count.wrappingAdd(1, ordering: .sequentiallyConsistent)
                    c.inside.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                }
                // Not #expect here: these threads are not the test's task.
                let queued =
                    i % 2 == 0
                    ? home.enqueue(on: device, work) : home.enqueue(on: device, limit: 1_000, work) == .queued
                if !queued { c.refused.wrappingAdd(1, ordering: .sequentiallyConsistent) }
            }
            gate.open()
            home.drainLanes()
            let refused = c.refused.load(ordering: .sequentiallyConsistent)
            let count = c.count.load(ordering: .sequentiallyConsistent)
            let overlapped = c.overlapped.load(ordering: .sequentiallyConsistent)
            #expect(refused == 0)
            #expect(count == 64)
            #expect(!overlapped)
        }
    }

    /// A bounded lane refuses past its limit from its first use on.
    @Test func aNewLaneCountsBoundedWork() {
        let gate = Latch()
        #expect(home.enqueue(on: "d6", limit: 1) { gate.pass() } == .queued)
        #expect(gate.waitForArrival())
        #expect(home.enqueue(on: "d6", limit: 1) {} == .full)
        gate.open()
        home.drainLanes()
        #expect(home.enqueue(on: "d6", limit: 1) {} == .queued)
        home.drainLanes()
    }

    /// Devices of one kind share what the engine looks up per trait, and devices of other kinds have their own: every
    /// device still reports exactly its own changes.
    @Test func devicesOfOneKindShareNothingTheySee() throws {
        let seen = Locked<[HomeEvent]>([])
        home.observe { e in seen.withLock { $0 += e } }
        try home.invoke("d2", trait: "onOff", command: "toggle")
        try home.invoke("d1", trait: "onOff", command: "toggle")
        try home.invoke("d4", trait: "onOff", command: "on")  // a light that is off ignores level commands
        try home.invoke("d4", trait: "levelControl", command: "moveToLevel", arguments: ["level": .int(50)])
        let events = seen.withLock { $0 }
        #expect(Set(events.map(\.deviceID)) == ["d2", "d1", "d4"])
        for id in ["d2", "d1"] {
            let onOff = try home.device(id).types[0].traits.first { $0.descriptor.id == .onOff }?.attributes
                .first { $0.descriptor.name == "onOff" }?.value
            #expect(onOff == .bool(true))
        }
        let level = try home.device("d4").types[0].traits.first { $0.descriptor.id == .levelControl }?.attributes
            .first { $0.descriptor.name == "currentLevel" }?.value
        #expect(level == .int(50))
        #expect(try home.device("d0").types[0].traits.first { $0.descriptor.id == .onOff }?.attributes
            .first { $0.descriptor.name == "onOff" }?.value == .bool(false))
    }

    /// `forEachDevice` hands over the same snapshots as `list()`, in the same order, one at a time.
    @Test func forEachDeviceIsListOneAtATime() throws {
        try home.invoke("d3", trait: "onOff", command: "on")
        var seen: [HomeDevice] = []
        home.forEachDevice { seen.append($0) }
        #expect(seen == home.list())
        #expect(seen.map(\.id) == (0..<8).map { "d\($0)" })
    }

    /// BasicInformation reports its defaults without keeping them per device, and a configured value over them.
    @Test func basicInformationDefaultsAndConfiguredValues() throws {
        let home = try Home(devices: [
            DeviceConfiguration(id: "plain", name: "Plain", types: [DeviceTypeConfiguration(.onOffLight)]),
            DeviceConfiguration(id: "named", name: "Named", types: [DeviceTypeConfiguration(.onOffLight, traits: [
                TraitConfiguration(.basicInformation, attributes: ["vendorName": .string("Acme"),
                                                                   "productName": .string("Hearth device")]),
            ])]),
        ], clock: ManualClock())
        func read(_ id: String, _ name: String) throws -> Value? {
            try home.device(id).types[0].traits.first { $0.descriptor.id == .basicInformation }?.attributes
                .first { $0.descriptor.name == name }?.value
        }
        #expect(try read("plain", "vendorName") == .string("Hearth"))
        #expect(try read("plain", "softwareVersionString") == .string(BasicInformationServer.hearthVersion))
        #expect(try read("plain", "serialNumber") == nil)
        #expect(try read("named", "vendorName") == .string("Acme"))
        #expect(try read("named", "productName") == .string("Hearth device"))
        try home.update("plain", trait: "basicInformation", attributes: ["nodeLabel": .string("Hall")])
        #expect(try read("plain", "nodeLabel") == .string("Hall"))
        #expect(try read("named", "nodeLabel") == .string(""))
    }
}

/// A coarse waker (a binding's loop) sleeps on a libdispatch timer on the real clock instead of a task.
@Suite(.timeLimit(.minutes(1))) struct CoarseWakerTests {
    @Test func returnsAtItsDeadlineOnTheRealClock() async {
        let clock = MonotonicClock(), waker = DeadlineWaker(coarse: true)
        let deadline = clock.now + 20
        await waker.wait(until: deadline, clock: clock)
        #expect(clock.now >= deadline)
        // A deadline already passed returns at once, and so does each of several waits in a row.
        for _ in 0..<3 { await waker.wait(until: clock.now, clock: clock) }
    }

    /// A wait an hour long ends at a wake (here one given before the wait, which is kept for it) and at a
    /// cancellation. Each end is awaited as a condition, so a wait that runs on fails its expectation here rather
    /// than the suite's time limit.
    @Test func aWakeEndsTheWaitEarly() async {
        let clock = MonotonicClock(), waker = DeadlineWaker(coarse: true)
        let inAnHour = clock.now + 3_600_000
        let ended = Recorder<String>()
        waker.wake()
        let woken = Task { await waker.wait(until: inAnHour, clock: clock); ended.append("woken") }
        #expect(await eventually { ended.all.contains("woken") }, "the wake ended the wait")
        let cancelled = Task { await waker.wait(until: inAnHour, clock: clock); ended.append("cancelled") }
        cancelled.cancel()
        #expect(await eventually { ended.all.contains("cancelled") }, "a cancelled wait returns")
        #expect(ended.all == ["woken", "cancelled"])
        woken.cancel()  // ends the first wait if the wake did not, so no task outlives the test
    }
}
