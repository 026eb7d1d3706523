import Testing
@testable import HearthModel

@Test func placeholder() {}
