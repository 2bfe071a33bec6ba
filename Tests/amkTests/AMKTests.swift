import Testing

/// Tests of the `amk` binary, run as a subprocess. Serialized: several of them keep both cores
/// busy, and the interruption test measures time.
@Suite(.serialized)
@MainActor struct AMKTests {}
