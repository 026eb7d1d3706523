import Foundation
import HearthJSON
import HearthMQTT
import HearthTestKit
import Testing

/// The broker restarts while commands stream in — killed, so it keeps no retained message and no
/// session. Whatever the hub acknowledged before is not lost: when the broker is back, the hub republishes its
/// newest state, which is the last acknowledged one or a later one the loader sent, never an older one.
@Suite(.serialized) struct BrokerRestartUnderLoadTests {
    @Test(.timeLimit(.minutes(2))) func aBrokerKilledUnderLoadLosesNoAcknowledgedState() async throws {
        let rig = try DaemonRig()
        let loader = try await Watcher(port: rig.broker.port)
        try rig.start()
        #expect(await loader.waitFor(status: "online"))
        /// The number in a name `n-<round>-<i>`, ordered across rounds.
        @Sendable func order(_ json: JSON?) -> Int? {
            guard case .string(let name)? = json else { return nil }
            let parts = name.split(separator: "-")
            guard parts.count == 3, parts[0] == "n",
                  let round = Int(parts[1]), let i = Int(parts[2]) else { return nil }
            return round * 1_000_000 + i
        }
        for round in 0..<3 {
            loader.clear()
            // Renames streaming in, paced by the hub's answers rather than by time: at most 16 unanswered. Once the
            // broker is gone no answer comes; each wait then ends at its limit (or at cancellation) and the stream
            // goes on until it is cancelled.
            let stream = Task {
                var i = 0
                while !Task.isCancelled {
                    i += 1
                    try? loader.client.publish("hearth/e2e/devices/lamp/set", payload: Array(
                        #"{"transaction":"\#(round)-\#(i)","setName":"n-\#(round)-\#(i)"}"#.utf8), qos: .atLeastOnce)
                    if i % 16 == 0 {
                        let sent = i
                        _ = await poll(within: .seconds(2)) {
                            loader.all.filter { $0.topic == "hearth/e2e/responses" }.count >= sent - 16
                        }
                    }
                }
            }
            // Wait until the hub has answered a good number of them, then kill the broker mid-stream.
            #expect(await eventually {
                loader.all.filter { $0.topic == "hearth/e2e/responses" }.count >= 50
            }, "round \(round)")
            rig.broker.stop(graceful: false)
            stream.cancel()
            _ = await stream.value
            let acknowledged = loader.all.filter { $0.topic == "hearth/e2e/responses" }.compactMap { m -> Int? in
                guard let r = try? JSON.parse(m.payload), r["ok"] == .bool(true) else { return nil }
                return order(r["result"]?["name"])
            }.max()
            #expect(acknowledged != nil, "round \(round): nothing was acknowledged")

            try rig.broker.restart()
            // A fresh client sees what the hub republished: no retained message survived the kill.
            let fresh = try await Watcher(port: rig.broker.port)
            #expect(await fresh.waitFor(status: "online"), "round \(round): \(rig.daemon?.output ?? "")")
            let doc = await fresh.first("hearth/e2e/devices/lamp").flatMap { try? JSON.parse($0.payload) }
            let republished = order(doc?["name"])
            #expect(
                republished != nil && republished! >= acknowledged!,
                Comment(
                    rawValue: "round \(round): republished \(doc?["name"]?.text ?? "nothing"), "
                        + "acknowledged up to \(acknowledged ?? -1)")
            )
        }
        // And the hub goes on serving, its state file holding the newest name after a clean stop.
        #expect(await eventually { loader.client.isConnected })
        #expect(try await loader.request("lamp", #""setName":"n-9-1""#)?["ok"] == .bool(true))
        rig.daemon?.signal(SIGTERM)
        #expect(await rig.daemon?.exitStatus() == 0)
        let saved = try String(contentsOfFile: rig.stateFile, encoding: .utf8)
        #expect(saved.contains("n-9-1"))
    }
}
