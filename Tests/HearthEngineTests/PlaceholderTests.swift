import Testing
@testable import HearthEngine

@Test func placeholder() {}
