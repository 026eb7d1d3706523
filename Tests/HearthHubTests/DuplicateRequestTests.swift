import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMQTT
import HearthTestKit
import Testing

/// QoS 1 delivers at least once: a copy of a request (a client's retry after a lost PUBACK) must not run twice.
@Suite(.serialized, .timeLimit(.minutes(2))) struct DuplicateRequestTests {
    @Test func aCopyOfAToggleIsAnsweredAgainNotRunAgainUntilTheWindowEnds() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        let toggle = Array(#"{"transaction":"t1","trait":"onOff","command":"toggle"}"#.utf8)
        // The request, and once it is answered the same delivery again (a client retrying after a lost PUBACK),
        // then a `get`: one device's requests are answered in order, so once the get is answered the copy has been
        // handled. (A copy that arrives while the first still runs is dropped: `RecentRequestsTests`.)
        #expect(
            try await rig.request("relay", String(decoding: toggle, as: UTF8.self), transaction: "t1")?["ok"]
                == .bool(true))
        try rig.probe.client.publish(rig.topics.set("relay"), payload: toggle, qos: .atLeastOnce)
        #expect(
            try await rig.request("relay", #"{"transaction":"g1","get":true}"#, transaction: "g1")?["ok"] == .bool(true)
        )
        #expect(answers(rig, "t1").count == 2)
        #expect(Set(answers(rig, "t1")).count == 1, "the copy gets the first one's response")
        #expect(relayState(rig) == .bool(true), "toggled once, not twice")

        // A minute later the same bytes are a new request (a client may reuse its transaction ids).
        try #require(rig.home.clock as? ManualClock).advance(by: RecentRequests.defaultWindow)
        try rig.probe.client.publish(rig.topics.set("relay"), payload: toggle, qos: .atLeastOnce)
        #expect(
            try await rig.request("relay", #"{"transaction":"g2","get":true}"#, transaction: "g2")?["ok"] == .bool(true)
        )
        #expect(answers(rig, "t1").count == 3)
        #expect(relayState(rig) == .bool(false))

        // A request without a transaction is never taken for a copy: two anonymous toggles are two presses.
        let anonymous = Array(#"{"trait":"onOff","command":"toggle"}"#.utf8)
        try rig.probe.client.publish(rig.topics.set("relay"), payload: anonymous, qos: .atLeastOnce)
        try rig.probe.client.publish(rig.topics.set("relay"), payload: anonymous, qos: .atLeastOnce)
        #expect(
            try await rig.request("relay", #"{"transaction":"g3","get":true}"#, transaction: "g3")?["ok"] == .bool(true)
        )
        #expect(relayState(rig) == .bool(false))
    }

    @Test func aCopyOfARefusedRequestRunsItChangedNothing() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        let refused = #"{"transaction":"r1","trait":"onOff","command":"blink"}"#
        #expect(try await rig.request("relay", refused, transaction: "r1")?["ok"] == .bool(false))
        try rig.probe.client.publish(rig.topics.set("relay"), payload: Array(refused.utf8), qos: .atLeastOnce)
        #expect(
            try await rig.request("relay", #"{"transaction":"g1","get":true}"#, transaction: "g1")?["ok"] == .bool(true)
        )
        #expect(answers(rig, "r1").count == 2, "refused twice, each time on its own")
    }

    private func answers(_ rig: HubRig, _ transaction: String) -> [[UInt8]] {
        rig.probe.messages.all.filter {
            $0.topic == rig.topics.responses && (try? JSON.parse($0.payload))?["transaction"] == .string(transaction)
        }.map(\.payload)
    }

    private func relayState(_ rig: HubRig) -> JSON? {
        rig.probe.messages.all.last { $0.topic == rig.topics.device("relay") }.flatMap { try? JSON.parse($0.payload) }
            .flatMap(onOff)
    }
}

@Suite struct RecentRequestsTests {
    private func key(_ n: Int) -> RecentRequests.Key {
        RecentRequests.Key(topic: "hearth/a/devices/d/set", payload: Array(#"{"transaction":\#(n)}"#.utf8))
    }

    @Test func aCopyWaitsForTheFirstThenGetsItsResponse() {
        var recent = RecentRequests()
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 0)) == .run)
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 10)) == .running)
        recent.answered(key(1), .string("ok"))
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 20)) == .answered(.string("ok")))
        #expect(recent.admit(key(2), now: EngineInstant(milliseconds: 20)) == .run)
    }

    @Test func theWindowCountsFromTheFirstArrival() {
        var recent = RecentRequests(window: 1000)
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 0)) == .run)
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 999)) == .running)
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 1000)) == .run)
        #expect(recent.count == 1)
    }

    @Test func itHoldsAtMostItsCapacityOldestForgottenFirst() {
        var recent = RecentRequests(window: 1_000_000, capacity: 100)
        for n in 0..<10_000 { #expect(recent.admit(key(n), now: EngineInstant(milliseconds: Int64(n))) == .run) }
        #expect(recent.count == 100)
        #expect(recent.admit(key(9_999), now: EngineInstant(milliseconds: 10_000)) == .running)
        #expect(recent.admit(key(0), now: EngineInstant(milliseconds: 10_000)) == .run)
    }

    @Test func aRefusedRequestIsForgottenAndASecondArrivalOfItRuns() {
        var recent = RecentRequests(window: 1000)
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 0)) == .run)
        recent.forget(key(1))
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 500)) == .run)
        // The stale place of the first arrival in the order does not drop the second one early.
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 1200)) == .running)
        #expect(recent.admit(key(1), now: EngineInstant(milliseconds: 1500)) == .run)
    }
}
