// The Matter node: placeholder until the parts land.
