import HearthKit
import Testing

/// The words a client shares with the hub are named with `import HearthKit` alone, and are the hub's own lists.
@Suite struct SharedVocabularyTests {
    @Test func codesStatusesAndConnectivityAreNamedThroughHearthKit() {
        let error = HomeError(code: .notFound, status: .notFound, message: "no device 'x'")
        #expect(error.description == "notFound (notFound): no device 'x'")
        #expect(HomeError.Code.allCases.count == 16)
        #expect(HomeError.Status.allCases.map(\.rawValue).first == "success")
        #expect(HomeError.Status.unsupportedCluster.rawStatus == 0xC3)
        #expect(HomeError.Status.busy.canonicalCode == .resourceExhausted)
        #expect(HomeError.Code(rawValue: "internal") == .internal)
        let connectivity = SourceConnectivity(connectivityState: .partiallyOnline, dataSourceLocality: .localPeer)
        #expect(connectivity.description == "partiallyOnline, localPeer")
        #expect(LocalityType.allCases.map(\.rawValue) == ["unspecified", "direct", "localPeer", "remote", "mixed"])
        #expect(ConnectivityState.allCases.map(\.rawValue) == ["unknown", "online", "offline", "partiallyOnline"])
    }
}
