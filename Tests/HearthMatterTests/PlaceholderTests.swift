import HearthMatter
import Testing

@Test func matterModuleLinks() {}
