import CLZMA

/// An `lzma_stream` at a stable heap address, ended exactly once.
///
/// liblzma keeps internal state behind the stream and reuses its allocations when the same kind of
/// coder is initialised again, which is why encoders and decoders keep one for their lifetime.
final class LZMAStream {
    let pointer: UnsafeMutablePointer<lzma_stream>

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: amk_lzma_stream_init())
    }

    deinit {
        lzma_end(pointer)
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }

    /// Points the stream at `input` (which may be empty) without touching the output side.
    func setInput(_ input: UnsafeRawBufferPointer) {
        pointer.pointee.next_in = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        pointer.pointee.avail_in = input.count
    }

    /// Points the stream at `output`.
    func setOutput(_ output: UnsafeMutableRawBufferPointer) {
        pointer.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        pointer.pointee.avail_out = output.count
    }
}
