import Testing
@testable import HearthMQTT

@Test func placeholder() {}
