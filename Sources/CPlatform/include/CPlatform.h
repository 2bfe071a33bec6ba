#ifndef AMK_CPLATFORM_H
#define AMK_CPLATFORM_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/xattr.h>
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

/// Extended attributes, without following a link (Swift's Glibc module does not import
/// <sys/xattr.h>, and Darwin's calls take extra arguments): list, get, and set on a descriptor.
static inline ssize_t amk_llistxattr(const char *path, char *list, size_t size) {
#if defined(__APPLE__)
    return listxattr(path, list, size, XATTR_NOFOLLOW);
#else
    return llistxattr(path, list, size);
#endif
}

static inline ssize_t amk_lgetxattr(const char *path, const char *name, void *value, size_t size) {
#if defined(__APPLE__)
    return getxattr(path, name, value, size, 0, XATTR_NOFOLLOW);
#else
    return lgetxattr(path, name, value, size);
#endif
}

static inline int amk_fsetxattr(int fd, const char *name, const void *value, size_t size) {
#if defined(__APPLE__)
    return fsetxattr(fd, name, value, size, 0, 0);
#else
    return fsetxattr(fd, name, value, size, 0);
#endif
}

#endif
