import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMQTT
import HearthTestKit
import Testing
import HearthSync

/// A throttle on a manual clock whose document is a counter: each publication records the counter's value
/// when it was built, so a test sees whether the newest content went out.
final class ThrottleRig: Sendable {
    final class Content: Sendable { let value = Locked(0) }
    let clock = ManualClock()
    let content = Content()
    let sent = Recorder<Int>()
    let throttle: PublicationThrottle

    init(window: Int64 = 100, rule: PublicationThrottle.Rule = .leadingEdge) {
        let content = content, sent = sent
        throttle = PublicationThrottle(window: window, rule: rule, clock: clock) {
            sent.append(content.value.withLock { $0 })
        }
    }

    /// The document changes to `value`.
    func change(to value: Int) {
        content.value.withLock { $0 = value }
        throttle.changed()
    }

    /// Waits until the window's timer sleeps on the clock, so that moving the clock wakes it.
    func timerAsleep() async -> Bool { await eventually { clock.sleeperCount > 0 } }
}

@Suite struct PublicationThrottleTests {
    @Test(.timeLimit(.minutes(1))) func aChangeAfterAQuietWindowGoesOutAtOnce() async {
        let rig = ThrottleRig()
        rig.change(to: 1)
        #expect(rig.sent.all == [1])
        rig.clock.advance(by: 100)
        rig.change(to: 2)
        #expect(rig.sent.all == [1, 2])
        #expect(!rig.throttle.isHolding)
    }

    @Test(.timeLimit(.minutes(1))) func aBurstMakesOneMorePublicationAtTheWindowsEndWithTheNewestContent() async {
        let rig = ThrottleRig()
        for v in 1...100 { rig.change(to: v) }
        #expect(rig.sent.all == [1])
        #expect(rig.throttle.isHolding)
        #expect(await rig.timerAsleep())
        rig.clock.advance(by: 99)
        #expect(rig.sent.all == [1])  // the window has not ended
        rig.clock.advance(by: 1)
        #expect(await eventually { rig.sent.all.count == 2 })
        #expect(rig.sent.all == [1, 100])
        #expect(rig.throttle.publications == 2)
        // A change right after the held one went out waits for the next window's end, never longer.
        rig.change(to: 101)
        #expect(rig.sent.all == [1, 100])
        #expect(await eventually { rig.clock.sleeperCount > 0 })
        rig.clock.advance(by: 100)
        #expect(await eventually { rig.sent.all == [1, 100, 101] })
    }

    @Test(.timeLimit(.minutes(1))) func aCleanStopFlushesWhatIsHeldAndNothingTwice() async {
        let rig = ThrottleRig()
        rig.change(to: 1)
        rig.change(to: 2)
        rig.change(to: 3)
        #expect(rig.sent.all == [1])
        rig.throttle.flush()
        #expect(rig.sent.all == [1, 3])
        rig.throttle.flush()  // nothing held: nothing sent
        #expect(await rig.timerAsleep())
        rig.clock.advance(by: 1000)
        // The window's timer ends with nothing held.
        #expect(await eventually { rig.clock.sleeperCount == 0 })
        #expect(rig.sent.all == [1, 3])
        #expect(!rig.throttle.isHolding)
    }

    @Test(.timeLimit(.minutes(1))) func aReconnectionRepublishesWithoutStartingAWindow() async {
        let rig = ThrottleRig()
        rig.change(to: 1)
        rig.throttle.publishNow()
        rig.clock.advance(by: 100)
        rig.change(to: 2)  // a window after the last change: at once, whatever was republished meanwhile
        #expect(rig.sent.all == [1, 1, 2])
    }

    @Test(.timeLimit(.minutes(1))) func nothingIsLostWhenChangesRaceTheWindowsEnd() async {
        let rig = ThrottleRig(window: 10)
        // Four writers change the document while the clock moves; whatever interleaving, the last publication
        // carries the last value once the changes stop and a window passes.
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<500 {
                        rig.content.value.withLock { $0 += 1 }
                        rig.throttle.changed()
                    }
                }
            }
            group.addTask {
                for _ in 0..<200 {
                    rig.clock.advance(by: 1)
                    await Task.yield()
                }
            }
        }
        #expect(await eventually {
            rig.clock.advance(by: 10)
            return !rig.throttle.isHolding && rig.sent.all.last == 2000
        })
        #expect(rig.sent.all.count < 2000 / 4)  // coalesced
        #expect(rig.sent.all == rig.sent.all.sorted())  // never an older document after a newer one
    }
}

/// The whole-home document's rule: one publication once a burst settles, bounded by the longest delay.
@Suite struct SettledPublicationTests {
    @Test(.timeLimit(.minutes(1))) func aBurstSpreadOverWindowsMakesOnePublicationOnceItSettles() async {
        let rig = ThrottleRig(rule: .settled(maximumDelay: 1_000))
        // Changes every 60 ms for 300 ms: never a quiet window, so nothing goes out until they stop.
        for v in 1...6 {
            rig.change(to: v)
            #expect(rig.sent.all.isEmpty)
            #expect(await rig.timerAsleep())
            rig.clock.advance(by: 60)
        }
        #expect(rig.sent.all.isEmpty)
        #expect(await rig.timerAsleep())
        rig.clock.advance(by: 39)  // 99 ms after the last change
        #expect(rig.sent.all.isEmpty)
        rig.clock.advance(by: 1)
        #expect(await eventually { rig.sent.all == [6] })
        #expect(await eventually { rig.clock.sleeperCount == 0 })
        #expect(!rig.throttle.isHolding)
        // A lone change later goes out a window after it, alone.
        rig.change(to: 7)
        #expect(await rig.timerAsleep())
        rig.clock.advance(by: 100)
        #expect(await eventually { rig.sent.all == [6, 7] })
    }

    @Test(.timeLimit(.minutes(1))) func aSteadyStreamStillGoesOutAtTheLongestDelay() async {
        let rig = ThrottleRig(rule: .settled(maximumDelay: 300))
        var value = 0
        // A change every 50 ms for a second: published at 300, 600 and 900 ms after each first held change.
        for _ in 0..<20 {
            value += 1
            rig.change(to: value)
            #expect(await rig.timerAsleep())
            rig.clock.advance(by: 50)
            // Let a publication the step made land before the next change.
            _ = await eventually { !rig.throttle.isHolding || rig.clock.sleeperCount > 0 }
        }
        #expect(await eventually { rig.sent.all.count == 3 })
        #expect(rig.sent.all == rig.sent.all.sorted())
        #expect(await rig.timerAsleep())
        rig.clock.advance(by: 100)
        #expect(await eventually { rig.sent.all.last == 20 })
        #expect(rig.sent.all.count == 4)
    }

    @Test(.timeLimit(.minutes(1))) func flushAndReconnectionPublishWhatIsHeldAndTheTimerEndsQuietly() async {
        let rig = ThrottleRig(rule: .settled(maximumDelay: 1_000))
        rig.change(to: 1)
        rig.change(to: 2)
        #expect(rig.sent.all.isEmpty)
        rig.throttle.flush()
        #expect(rig.sent.all == [2])
        rig.throttle.flush()  // nothing held
        // The timer, asleep or not yet started, ends without publishing.
        #expect(await timerEnded(rig))
        #expect(rig.sent.all == [2])
        rig.change(to: 3)
        rig.throttle.publishNow()
        #expect(rig.sent.all == [2, 3])
        #expect(await timerEnded(rig))
        #expect(rig.sent.all == [2, 3])
    }

    /// Moves the clock until the timer task has ended.
    private func timerEnded(_ rig: ThrottleRig) async -> Bool {
        await eventually {
            rig.clock.advance(by: 100)
            return !rig.throttle.isTimerRunning
        }
    }
}

@Suite struct OwnerIndexTests {
    @Test(.timeLimit(.minutes(1))) func theOwnerIndexFollowsSummariesAndKeepsTheDuplicateRule() throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch", "garage"])
        #expect(rig.router.directory.owner(of: "porch") == "b")
        #expect(rig.router.directory.owner(of: "garage") == "b")
        #expect(rig.router.directory.owner(of: "attic") == nil)
        // Renamed (a new id) and removed: the index follows the newest summary.
        rig.peer("b", "online", devices: ["porch-light"])
        #expect(rig.router.directory.owner(of: "porch") == nil)
        #expect(rig.router.directory.owner(of: "garage") == nil)
        #expect(rig.router.directory.owner(of: "porch-light") == "b")
        // Added on another hub.
        rig.peer("c", "online", devices: ["attic", "attic"])  // listed twice by one hub: still one owner
        #expect(rig.router.directory.owner(of: "attic") == "c")
        #expect(rig.router.directory.hubsListing("attic") == ["c"])
        // Two hubs list one id: nobody owns it (requests refused), logged once.
        rig.peer("b", "online", devices: ["porch-light", "attic"])
        #expect(rig.router.directory.owner(of: "attic") == nil)
        #expect(rig.router.directory.hubsListing("attic") == ["c", "b"])
        rig.peer("b", "online", devices: ["porch-light", "attic"])
        #expect(rig.logs.all.filter { $0.contains("all list device 'attic'") }.count == 1)
        // One of them drops it: the other owns it again.
        rig.peer("c", "online", devices: [])
        #expect(rig.router.directory.owner(of: "attic") == "b")
        // A peer that clears its summary owns nothing.
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/devices", payload: [], retain: true))
        #expect(rig.router.directory.owner(of: "attic") == nil)
        #expect(rig.router.directory.owner(of: "porch-light") == nil)
        // A peer listing one of this hub's devices: the local device shadows it, and it is logged.
        rig.peer("b", "online", devices: ["lamp"])
        #expect(rig.logs.all.contains { $0.contains("hub 'b' lists device 'lamp', which is this hub's own") })
        let (_, parsed) = HubRequest.parse(Array(#"{"transaction":"t","trait":"onOff","command":"on"}"#.utf8))
        #expect(rig.router.target(of: try parsed.get(), device: "lamp") == nil)
    }

    @Test(.timeLimit(.minutes(1))) func aBadSummaryLeavesTheIndexAsItWas() throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch"])
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/devices", payload: Array("not json".utf8), retain: true))
        _ = rig.router.handle(
            MQTTMessage(topic: "hearth/b/devices", payload: Array(#"[{"name":"x"}]"#.utf8), retain: true))
        #expect(rig.router.directory.owner(of: "porch") == "b")
    }
}

@Suite struct HomeDocumentCacheTests {
    /// A peer's device in the whole home: its members as the peer published them, in their order, without its own
    /// `hub` and `sourceConnectivity`, then `hub` and the connectivity as this hub sees it.
    @Test(.timeLimit(.minutes(1))) func aPeersEntryKeepsItsMembersAndTakesHubAndConnectivityLast() throws {
        let rig = try PeerRig()
        let summary = #"[{"id":"x","hub":"zz","name":"X \"q\" 🏠","sourceConnectivity":{"connectivityState":"offline","#
            + #""dataSourceLocality":"direct"},"roomId":null,"types":[{"type":"OnOffLight","deviceTypeId":256,"#
            + #""isPrimaryType":true}],"extra":[1,{"a":2.5}]}]"#
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/devices", payload: Array(summary.utf8), retain: true))
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/status", payload: Array("online".utf8), retain: true))
        rig.router.directory.linkChanged(up: true)
        let expected = try JSON.parse(
            Array(
                (#"{"id":"x","name":"X \"q\" 🏠","roomId":null,"types":[{"type":"OnOffLight","#
                    + #""deviceTypeId":256,"isPrimaryType":true}],"extra":[1,{"a":2.5}],"hub":"b","#
                    + #""sourceConnectivity":{"connectivityState":"offline","dataSourceLocality":"localPeer"}}"#).utf8))
        guard case .array(let entries) = try JSON.parse(rig.router.directory.homeDocumentBytes()) else {
            Issue.record("not a list"); return
        }
        #expect(entries.last?.bytes == expected.bytes)
    }


    /// The whole-home document written from each peer's cached entries is byte for byte the one built whole,
    /// whatever changed: a peer's summary, its status, a new peer, a cleared summary, our own link.
    @Test(.timeLimit(.minutes(1))) func theCachedDocumentIsTheWholeOne() throws {
        let rig = try PeerRig()
        let directory = rig.router.directory
        func same(_ step: String) {
            #expect(directory.homeDocumentBytes() == directory.homeDocument().bytes, "\(step)")
        }
        same("no peers")
        rig.peer("b", "online", devices: ["porch", "garage"])
        same("b online")
        directory.linkChanged(up: true)
        same("link up")
        same("nothing changed (all cached)")
        rig.peer("c", "online", devices: ["attic"])
        same("c added")
        rig.peer("b", "online", devices: ["porch-light"])
        same("b's summary changed")
        _ = rig.router.handle(MQTTMessage(topic: "hearth/c/status", payload: Array("offline".utf8), retain: true))
        same("c offline")
        directory.linkChanged(up: false)
        same("link down")
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/devices", payload: [], retain: true))
        same("b's summary cleared")
        _ = rig.router.handle(
            MQTTMessage(
                topic: "hearth/d/devices",
                payload: Array(
                    #"[{"id":"x","name":"X","hub":"spoofed","sourceConnectivity":{"connectivityState":"offline"}}]"#
                        .utf8), retain: true))
        same("d heard of before its status")
    }
}
