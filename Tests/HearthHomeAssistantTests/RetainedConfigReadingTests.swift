import HearthEngine
import HearthHomeAssistant
import HearthModel
import HearthSync
import HearthTestKit
import Testing

/// The bridge reads the retained discovery configs once per connection: it subscribes to its config filter (and
/// to the earlier layout's topic of its hub config), sends itself a marker, and unsubscribes and announces when the
/// marker comes back or the time limit passes; a hub config found in the earlier layout adds a second step that
/// reads that layout and moves the hub's configs out of it. Here the
/// bridge alone, its subscribe, unsubscribe and publish recorded, on a clock that moves only when told; the
/// same against a real broker is `HomeAssistantRetainedConfigTests` (HearthHubTests).
@Suite struct RetainedConfigReadingTests {
    enum Call: Equatable, Sendable { case subscribe(String), unsubscribe(String), publish(String) }

    final class Calls: Sendable {
        let calls = Locked<[Call]>([])
        let messages = Locked<[HomeAssistantMessage]>([])
        let logs = Locked<[String]>([])
        var all: [Call] { calls.withLock { $0 } }
        /// The markers published so far.
        var markers: [HomeAssistantMessage] {
            messages.withLock { $0.filter { $0.topic == "hearth/pi/discovery-sync" } }
        }
        func clear() { calls.withLock { $0 = [] } }
    }

    let filter = "homeassistant/device/hearth_pi/+/config"
    let legacyHub = "homeassistant/device/hearth_pi/config"
    let legacyFilter = "homeassistant/device/+/config"
    var subscribed: [Call] { [.subscribe(filter), .subscribe(legacyHub)] }
    var unsubscribed: [Call] { [.unsubscribe(filter), .unsubscribe(legacyHub)] }
    /// What the bridge announces: the hub, then its devices (the mirrored garage lamp is its owner's).
    let announcements: [Call] = ["hearth_pi", "hearth_pi__kitchen-lamp", "hearth_pi__hall_5fswitch", "hearth_pi__pump"]
        .map { .publish("homeassistant/device/hearth_pi/\($0)/config") }

    func bridge(_ home: Home? = nil, clock: ManualClock = ManualClock()) throws -> (HomeAssistantBridge, Calls) {
        let calls = Calls()
        let bridge = HomeAssistantBridge(
            home: try home ?? makeHome(), options: options, clock: clock, syncTimeout: .seconds(30),
            subscribe: { f in calls.calls.withLock { $0.append(.subscribe(f)) } },
            unsubscribe: { f in calls.calls.withLock { $0.append(.unsubscribe(f)) } },
            log: { line in calls.logs.withLock { $0.append(line) } }
        ) { m in
            calls.calls.withLock { $0.append(.publish(m.topic)) }
            calls.messages.withLock { $0.append(m) }
        }
        return (bridge, calls)
    }

    @Test func theMarkerComingBackEndsTheReading() throws {
        let (bridge, calls) = try bridge()
        bridge.connected()
        // Subscribe first, then the marker on the same connection; nothing is announced yet.
        #expect(calls.all == subscribed + [.publish("hearth/pi/discovery-sync")])
        #expect(bridge.isReadingRetainedConfigs)
        let marker = try #require(calls.markers.first)
        #expect(!marker.retain)
        calls.clear()
        bridge.received(topic: marker.topic, payload: marker.payload)
        #expect(calls.all == unsubscribed + announcements)
        #expect(!bridge.isReadingRetainedConfigs)
        #expect(ended(bridge) == [1, 0])
        #expect(calls.logs.withLock { $0 }.isEmpty)
        // The same marker again (a duplicate) ends nothing more.
        bridge.received(topic: marker.topic, payload: marker.payload)
        #expect(calls.all == unsubscribed + announcements)
    }

    @Test func anythingElseOnTheMarkerTopicIsIgnored() throws {
        let (bridge, calls) = try bridge()
        bridge.connected()
        let marker = try #require(calls.markers.first)
        calls.clear()
        let text = String(decoding: marker.payload, as: UTF8.self)
        let nonce = text.split(separator: "-").first.map(String.init) ?? ""
        for payload in [[], Array("online".utf8), Array("\(nonce)-2".utf8), Array("\(nonce)-0".utf8),
                        Array("0-1".utf8), marker.payload + [0], Array(repeating: 0xFF, count: 70_000)] {
            bridge.received(topic: marker.topic, payload: payload)
        }
        // A marker's payload on another topic is not a marker either.
        bridge.received(topic: "hearth/other/discovery-sync", payload: marker.payload)
        #expect(calls.all.isEmpty)
        #expect(bridge.isReadingRetainedConfigs)
    }

    @Test func aReconnectionDuringTheReadingSendsANewMarkerWithoutSubscribingTwice() throws {
        let (bridge, calls) = try bridge()
        bridge.connected()
        bridge.connected()  // the client re-sent the still-recorded subscription itself
        #expect(calls.all.filter { if case .subscribe = $0 { true } else { false } } == subscribed)
        let markers = calls.markers
        try #require(markers.count == 2)
        #expect(markers[0].payload != markers[1].payload)
        calls.clear()
        bridge.received(topic: markers[0].topic, payload: markers[0].payload)  // the first connection's
        #expect(calls.all.isEmpty)
        bridge.received(topic: markers[1].topic, payload: markers[1].payload)
        #expect(calls.all == unsubscribed + announcements)
        // The next connection reads again.
        calls.clear()
        bridge.connected()
        #expect(Array(calls.all.prefix(2)) == subscribed)
    }

    @Test(.timeLimit(.minutes(1))) func aMarkerThatNeverComesBackEndsTheReadingAfterTheTimeLimit() async throws {
        let clock = ManualClock()
        let (bridge, calls) = try bridge(clock: clock)
        bridge.connected()
        #expect(await waitUntil { clock.sleeperCount == 1 })
        clock.advance(by: 29_999)
        #expect(bridge.isReadingRetainedConfigs)
        clock.advance(by: 1)
        #expect(await waitUntil { !bridge.isReadingRetainedConfigs })
        #expect(ended(bridge) == [0, 1])
        // Ended all the same: unsubscribed, and everything announced (just after the reading's end).
        #expect(await waitUntil { Array(calls.all.suffix(6)) == unsubscribed + announcements })
        #expect(calls.logs.withLock { $0 }.count == 1)
        #expect(
            calls.logs.withLock { $0 }.first?.contains("hearth/pi/discovery-sync did not come back within 30") == true)
        // Its marker, late, ends nothing.
        let marker = try #require(calls.markers.first)
        bridge.received(topic: marker.topic, payload: marker.payload)
        #expect(ended(bridge) == [0, 1])
    }

    @Test(.timeLimit(.minutes(1))) func anEarlierConnectionsTimeLimitDoesNotEndTheCurrentReading() async throws {
        let clock = ManualClock()
        let (bridge, calls) = try bridge(clock: clock)
        bridge.connected()
        #expect(await waitUntil { clock.sleeperCount == 1 })
        clock.advance(by: 20_000)
        bridge.connected()
        #expect(await waitUntil { clock.sleeperCount == 2 })
        clock.advance(by: 10_000)  // the first connection's deadline: its task was cancelled
        clock.advance(by: 19_999)
        #expect(bridge.isReadingRetainedConfigs)
        clock.advance(by: 1)
        #expect(await waitUntil { !bridge.isReadingRetainedConfigs })
        #expect(ended(bridge) == [0, 1])
        #expect(calls.all.filter { $0 == .unsubscribe(filter) }.count == 1)
        #expect(await waitUntil { calls.all.filter { $0 == announcements[0] }.count == 1 })
    }

    @Test func aHubWithNoDevicesClearsTheConfigsOfTheDevicesItHad() throws {
        let (bridge, calls) = try bridge(try Home(devices: []))
        bridge.connected()
        #expect(calls.all == subscribed + [.publish("hearth/pi/discovery-sync")])
        calls.clear()
        bridge.received(
            topic: "homeassistant/device/hearth_pi/hearth_pi__lamp/config", payload: Array(#"{"device":{}}"#.utf8))
        #expect(calls.all == [.publish("homeassistant/device/hearth_pi/hearth_pi__lamp/config")])
        #expect(
            calls.messages.withLock { $0.last }
                == HomeAssistantMessage(
                    topic: "homeassistant/device/hearth_pi/hearth_pi__lamp/config", payload: [], retain: true))
        // The marker: then only the hub itself is announced.
        calls.clear()
        let marker = try #require(calls.markers.first)
        bridge.received(topic: marker.topic, payload: marker.payload)
        #expect(calls.all == unsubscribed + [.publish("homeassistant/device/hearth_pi/hearth_pi/config")])
    }

    @Test(.timeLimit(.minutes(1))) func theEarlierLayoutsConfigsAreMovedKeepingTheirEntities() async throws {
        let clock = ManualClock()
        let home = try makeHome()
        let (bridge, calls) = try bridge(home, clock: clock)
        home.observe { bridge.handle($0) }
        let config = Array(#"{"device":{}}"#.utf8)
        bridge.connected()
        #expect(await waitUntil { clock.sleeperCount == 1 })
        // The hub's own config in the earlier layout: this hub ran an earlier version.
        bridge.received(topic: legacyHub, payload: config)
        let first = try #require(calls.markers.first)
        calls.clear()
        bridge.received(topic: first.topic, payload: first.payload)
        // Second step: the earlier layout's filter, and a second marker after it.
        #expect(calls.all == [.subscribe(legacyFilter), .publish("hearth/pi/discovery-sync")])
        let second = try #require(calls.markers.last)
        #expect(second.payload != first.payload)
        #expect(bridge.isReadingRetainedConfigs)
        calls.clear()
        for objectID in ["hearth_pi__kitchen-lamp", "hearth_pi__old-lamp", "hearth_garage__lamp", "tasmota_1"] {
            bridge.received(topic: "homeassistant/device/\(objectID)/config", payload: config)
        }
        bridge.received(topic: "homeassistant/device/hearth_pi__pump/config", payload: [])  // already cleared
        bridge.received(topic: legacyHub, payload: config)  // again, through the filter
        #expect(calls.all.isEmpty)
        // A rename and Home Assistant's birth while the reading goes on announce nothing: its end announces.
        try home.setName("kitchen-lamp", "Cooker lamp")
        bridge.received(topic: "homeassistant/status", payload: Array("online".utf8))
        #expect(calls.all.isEmpty)

        bridge.received(topic: second.topic, payload: second.payload)
        let legacy = { (objectID: String) in "homeassistant/device/\(objectID)/config" }
        #expect(
            calls.all == unsubscribed + [
                .unsubscribe(legacyFilter), .publish(legacy("hearth_pi")),
                .publish(legacy("hearth_pi__kitchen-lamp")), .publish(legacy("hearth_pi__old-lamp"))
            ])
        let moves = calls.messages.withLock { Array($0.suffix(3)) }
        #expect(moves.allSatisfy { $0.retain })
        #expect(moves.map { String(decoding: $0.payload, as: UTF8.self) } == [
            #"{"migrate_discovery":true}"#, #"{"migrate_discovery":true}"#, "",  // the old lamp is no longer here
        ])
        #expect(!bridge.isReadingRetainedConfigs)
        #expect(ended(bridge) == [1, 0])
        #expect(calls.logs.withLock { $0 }.count == 1)
        #expect(calls.logs.withLock { $0 }.first?.contains("moving 2 config(s)") == true)

        // Home Assistant is given time to unload the entities; then the new topics, then the old ones cleared.
        // The settle's sleeper, and the reading's cancelled deadline, which counts until the clock passes it.
        calls.clear()
        #expect(await waitUntil { clock.sleeperCount == 2 })
        clock.advance(by: 1_999)
        #expect(calls.all.isEmpty)
        clock.advance(by: 1)
        #expect(await waitUntil { calls.all.count == announcements.count + 2 })
        #expect(
            calls.all == announcements + [.publish(legacy("hearth_pi")), .publish(legacy("hearth_pi__kitchen-lamp"))])
        #expect(calls.messages.withLock { $0.suffix(2).allSatisfy { $0.payload.isEmpty && $0.retain } })
        let renamed = try #require(
            calls.messages.withLock {
                $0.first { $0.topic == "homeassistant/device/hearth_pi/hearth_pi__kitchen-lamp/config" }
            })
        #expect(String(decoding: renamed.payload, as: UTF8.self).contains(#""name":"Cooker lamp""#))
    }

    @Test func withoutTheHubsConfigInTheEarlierLayoutThatLayoutIsNotRead() throws {
        let (bridge, calls) = try bridge()
        bridge.connected()
        bridge.received(topic: legacyHub, payload: [])  // cleared: nothing to move
        let marker = try #require(calls.markers.first)
        calls.clear()
        bridge.received(topic: marker.topic, payload: marker.payload)
        #expect(calls.all == unsubscribed + announcements)
    }

    /// How many readings ended by the marker, by the time limit.
    func ended(_ bridge: HomeAssistantBridge) -> [Int] {
        [bridge.readingsEnded.byMarker, bridge.readingsEnded.byTimeout]
    }

    /// Checks `condition` until it holds, for at most 10 s (the bridge's deadline task runs on its own).
    func waitUntil(_ condition: () -> Bool) async -> Bool { await poll(within: .seconds(10), condition) }
}
