import CLZMA

/// A branch/call/jump converter run before LZMA2 in a block's filter chain (`xz --x86`).
///
/// Machine code addresses its calls and jumps relative to each instruction, so calls to one
/// function look different at every call site. The converter rewrites them as absolute addresses,
/// which repeat, and LZMA finds the repeats: on a toolchain's x86-64 shared libraries (96 MB) the
/// x86 filter made preset 6's output 3.6% smaller, and took 10% less time, since there is more to
/// match and less to search. On anything but linked machine code it only disturbs (text) or undoes
/// (object files, whose unlinked calls all read zero) repeats, so it is chosen per block for blocks
/// that are mostly executables and shared libraries. The filter is in the block header:
/// every xz decoder since xz 4.999 undoes it without being told.
public enum BranchFilter: Sendable, Hashable, CaseIterable {
    /// x86 and x86-64 code (`LZMA_FILTER_X86`).
    case x86

    var id: lzma_vli {
        switch self {
        case .x86: amk_lzma_filter_x86
        }
    }

    /// The filter liblzma names `id`, if it is one of ours.
    init?(id: lzma_vli) {
        guard let known = Self.allCases.first(where: { $0.id == id }) else { return nil }
        self = known
    }
}
