import HearthKit
import Testing

/// The generated value types read and write the hub's JSON coding, without a hub.
@Suite struct GeneratedValueTests {
    typealias Limits = Matter.OccupancySensingTrait.HoldTimeLimitsStruct

    @Test func aMatterStructReadsAndWritesItsFieldsByName() {
        let json: JSON = .object([(key: "holdTimeMin", value: .int(5)), (key: "holdTimeMax", value: .int(600)),
                                  (key: "holdTimeDefault", value: .int(60))])
        let limits = Limits(json: json)
        #expect(limits == Limits(holdTimeMin: 5, holdTimeMax: 600, holdTimeDefault: 60))
        #expect(limits?.json == json)
        #expect(Limits(json: .object([(key: "holdTimeMin", value: .int(5))])) == nil, "every field is needed")
        #expect(Limits(json: .object([(key: "holdTimeMin", value: .int(-1)), (key: "holdTimeMax", value: .int(600)),
                                      (key: "holdTimeDefault", value: .int(60))])) == nil, "a uint16 is not negative")
        #expect(Limits(json: .int(1)) == nil)
        let occupancy = Matter.OccupancySensingTrait.OccupancyBitmap(
            json: .object([(key: "occupied", value: .bool(true))]))
        #expect(occupancy == .occupied)
    }
}
