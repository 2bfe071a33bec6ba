#ifndef AMK_CPLATFORM_H
#define AMK_CPLATFORM_H

#if defined(__linux__)
#include <malloc.h>
#endif

/// Fixes glibc's mmap threshold (disabling its dynamic raising); returns 1 on success, 0 where
/// there is nothing to set. Swift's Glibc module does not import <malloc.h>.
static inline int amk_set_mmap_threshold(int bytes) {
#if defined(__linux__) && defined(M_MMAP_THRESHOLD)
    return mallopt(M_MMAP_THRESHOLD, bytes);
#else
    (void)bytes;
    return 0;
#endif
}

#endif
