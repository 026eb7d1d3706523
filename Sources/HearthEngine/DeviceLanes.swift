import Dispatch
import HearthSync
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
///
/// A lane is made on its first use: most devices of a big hub (lights without hardware) never use theirs, and a
/// queue, its label and its counter for each device showed in a big hub's memory (docs/benchmarks.md, "1,000
/// devices"). Making one takes a lock of its own for a moment (never the engine's, never across the work), so two
/// first uses at once make one lane.
final class DeviceLanes: Sendable {
    final class Lane: Sendable {
        let queue: DispatchQueue
        /// The bounded work (requests) queued or running here.
        let bounded = Atomic<Int>(0)

        init(label: String) { queue = DispatchQueue(label: label) }
    }

    private let deviceIDs: [String]
    private let lanes: Locked<[Lane?]>

    init(deviceIDs: [String]) {
        self.deviceIDs = deviceIDs
        lanes = Locked([Lane?](repeating: nil, count: deviceIDs.count))
    }

    /// Lane `index`, made now if it is its first use.
    func lane(_ index: Int) -> Lane {
        lanes.withLock { lanes in
            if let lane = lanes[index] { return lane }
            let lane = Lane(label: "hearth.device.\(deviceIDs[index])")
            lanes[index] = lane
            return lane
        }
    }

    /// Runs `work` on lane `index`, after everything queued there before it.
    func async(_ index: Int, _ work: @escaping @Sendable () -> Void) {
        lane(index).queue.async(execute: work)
    }

    /// Runs `work` on lane `index` unless `limit` pieces of bounded work are already queued or running there; then
    /// returns false and runs nothing. What a lane holds for a device whose hardware hangs is bounded this way.
    func async(_ index: Int, limit: Int, _ work: @escaping @Sendable () -> Void) -> Bool {
        let lane = lane(index)
        guard lane.bounded.wrappingAdd(1, ordering: .relaxed).oldValue < limit else {
            lane.bounded.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        lane.queue.async {
            defer { lane.bounded.wrappingSubtract(1, ordering: .relaxed) }
            work()
        }
        return true
    }

    /// Returns once everything queued on lane `index` so far has run (at once when the lane was never used).
    func drain(_ index: Int) {
        guard let lane = lanes.withLock({ $0[index] }) else { return }
        lane.queue.sync {}
    }
}
