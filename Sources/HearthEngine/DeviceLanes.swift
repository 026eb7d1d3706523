import Dispatch
import Synchronization

/// Where each device's blocking work runs: one serial lane per device.
///
/// A relay's ioctl, a PWM's sysfs write, an I²C read that stalls for a second on a failing bus: whatever may
/// block on a device's hardware runs on that device's lane, so it delays only later work for the same device.
/// Requests for a device run there too, in arrival order, which keeps one client's requests to one device in
/// order without ordering unrelated devices behind each other.
///
/// A lane is a libdispatch serial queue. Serial queues target the overcommitting root queue, which starts another
/// thread whenever every thread it has is busy, so a lane blocked for seconds never holds up another lane; idle
/// threads are given back by libdispatch. This is what libdispatch does well, so it is not written again here.
final class DeviceLanes: Sendable {
    private let queues: [DispatchQueue]
    /// Per lane, the bounded work (requests) queued or running there.
    private let bounded: [Counter]

    final class Counter: Sendable { let value = Atomic<Int>(0) }

    init(deviceIDs: [String]) {
        queues = deviceIDs.map { DispatchQueue(label: "hearth.device.\($0)") }
        bounded = deviceIDs.map { _ in Counter() }
    }

    /// Runs `work` on lane `index`, after everything queued there before it.
    func async(_ index: Int, _ work: @escaping @Sendable () -> Void) {
        queues[index].async(execute: work)
    }

    /// Runs `work` on lane `index` unless `limit` pieces of bounded work are already queued or running there; then
    /// returns false and runs nothing. What a lane holds for a device whose hardware hangs is bounded this way.
    func async(_ index: Int, limit: Int, _ work: @escaping @Sendable () -> Void) -> Bool {
        let counter = bounded[index]
        guard counter.value.wrappingAdd(1, ordering: .relaxed).oldValue < limit else {
            counter.value.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        queues[index].async {
            defer { counter.value.wrappingSubtract(1, ordering: .relaxed) }
            work()
        }
        return true
    }

    /// Returns once everything queued on lane `index` so far has run.
    func drain(_ index: Int) {
        queues[index].sync {}
    }
}
