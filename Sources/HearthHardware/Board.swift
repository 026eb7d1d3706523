
/// A board description (`boards/*.yaml`): the named pins, PWM channels and sensors a configuration
/// refers to. Placeholder shape; the hardware bindings issue completes it.
public struct Board: Sendable {
    public var name: String
    public var isSimulated: Bool

    public init(name: String, isSimulated: Bool) {
        self.name = name
        self.isSimulated = isSimulated
    }
}
