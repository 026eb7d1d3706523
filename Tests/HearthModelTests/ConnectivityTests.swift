import HearthModel
import Testing

@Suite struct ConnectivityAggregationTests {
    typealias C = SourceConnectivity

    /// The documented rule, written independently of the implementation.
    func expectedState(_ states: [ConnectivityState]) -> ConnectivityState {
        let set = Set(states)
        if set.isEmpty || set == [.unknown] { return .unknown }
        if set == [.online] { return .online }
        if set == [.offline] { return .offline }
        return .partiallyOnline
    }

    func expectedLocality(_ localities: [DataSourceLocality]) -> DataSourceLocality {
        let known = Set(localities.filter { $0 != .unspecified })
        if known.isEmpty { return .unspecified }
        if known.count == 1 { return known.first! }
        return .mixed
    }

    @Test func everyPairAndTripleOfTraitStatesAggregatesAsDocumented() {
        let traitStates: [ConnectivityState] = [.online, .offline, .unknown]
        let localities: [DataSourceLocality] = [.unspecified, .direct, .localPeer, .remote]
        var parts: [[C]] = [[]]
        for _ in 0..<3 {
            parts = parts.flatMap { p in traitStates.flatMap { s in localities.map { l in p + [C(s, l)] } } }
                + parts
        }
        var checked = 0
        for p in parts {
            let a = C.aggregate(p)
            #expect(a.connectivityState == expectedState(p.map(\.connectivityState)), "\(p)")
            #expect(a.dataSourceLocality == expectedLocality(p.map(\.dataSourceLocality)), "\(p)")
            checked += 1
        }
        #expect(checked > 1000)
    }

    @Test func namedCases() {
        #expect(C.aggregate([]) == C(.unknown, .unspecified))
        #expect(C.aggregate([.directOnline, .directOnline]) == .directOnline)
        #expect(C.aggregate([C(.offline, .direct), C(.offline, .direct)]) == C(.offline, .direct))
        #expect(C.aggregate([.directOnline, C(.offline, .direct)]) == C(.partiallyOnline, .direct))
        #expect(C.aggregate([.directOnline, C(.online, .localPeer)]) == C(.online, .mixed))
        #expect(C.aggregate([.directOnline, .notHeardFrom]) == C(.partiallyOnline, .direct))
        #expect(C.aggregate([.notHeardFrom, .notHeardFrom]) == .notHeardFrom)
    }

    @Test func aggregatesOfAggregatesKeepPartialAndMixed() {
        let partial = C(.partiallyOnline, .mixed)
        #expect(C.aggregate([partial, .directOnline]) == C(.partiallyOnline, .mixed))
        #expect(C.aggregate([partial]) == partial)
    }

    @Test func onlyOnlineKnownSourcesTakeCommands() {
        #expect(C.directOnline.acceptsCommands)
        #expect(C(.online, .localPeer).acceptsCommands)
        #expect(!C(.offline, .direct).acceptsCommands)
        #expect(!C(.unknown, .unspecified).acceptsCommands)
        #expect(!C(.online, .unspecified).acceptsCommands)
    }
}
