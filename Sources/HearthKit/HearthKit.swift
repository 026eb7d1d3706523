// HearthKit: the Google Home APIs' shape (devices → device types → traits → attributes and commands) over any
// Hearth hub, through the MQTT contract of docs/mqtt-api.md only — no engine, no hardware. docs/swift-api.md is the
// guide.
//
// Layout: Connection/ (the broker, the home's state, streams, requests), Model/ (HomeDevice, HomeError,
// connectivity), Dynamic/ (traits and device types by name, values as JSON), Typed/ (what generated types are built
// from) and Generated/ (device types, traits, enums, bitmaps and commands, written by `hearthkit-generate` from the
// hub's own tables — never by hand).

// The untyped layer speaks JSON values; one `import HearthKit` should be enough to use it.
@_exported public import HearthJSON
