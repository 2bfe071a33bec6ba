/// A failure of the benchmark itself (not of a measured tool), with a message for the user.
struct BenchError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
