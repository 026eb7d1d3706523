import Testing
@testable import HearthLinux

@Test func placeholder() {}
