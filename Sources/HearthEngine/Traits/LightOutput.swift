/// What a light's or a relay's binding reads from its endpoint's output: whether the load is powered, from OnOff,
/// LevelControl's fade-out and Identify's blink together.
extension EndpointOutput {
    public init(onOff: Bool? = nil, level: UInt8? = nil) {
        self.init()
        self.onOff = onOff
        self.level = level
    }

    /// Whether the load should be powered.
    public var isLit: Bool { identifyPhase ?? ((onOff ?? true) || isFadingOut) }
}
