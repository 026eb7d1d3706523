// Placeholder until the Linux I/O layer lands.
