#ifndef AMK_CPLATFORM_H
#define AMK_CPLATFORM_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <fcntl.h>
#include <dirent.h>
#include <sys/resource.h>
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

/// Caps the number of glibc's malloc arenas; returns 1 on success, 0 where there is nothing to
/// set. Every arena past the first reserves 64 MiB of address space up front, which an
/// address-space limit (`ulimit -v`) counts whole.
static inline int amk_set_arena_max(int arenas) {
#if defined(__linux__) && defined(M_ARENA_MAX)
    return mallopt(M_ARENA_MAX, arenas);
#else
    (void)arenas;
    return 0;
#endif
}

/// The soft limit of `resource` (0: the address space, 1: the stack) in bytes; -1 when there is
/// none or it cannot be read. Swift's Glibc module gives RLIMIT_* a type per platform.
static inline long long amk_soft_limit(int resource) {
    struct rlimit limit;
    if (getrlimit(resource == 0 ? RLIMIT_AS : RLIMIT_STACK, &limit) != 0) return -1;
    if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > (rlim_t)0x7fffffffffffffffLL) return -1;
    return (long long)limit.rlim_cur;
}

/// Linux's O_PATH: a descriptor that only names a folder, for `openat` to go on from, and that a
/// folder one may search but not read still gives. Swift's Glibc module hides it (glibc defines
/// it for _GNU_SOURCE only); 0 where there is none.
static inline int amk_o_path(void) {
#if defined(O_PATH)
    return O_PATH;
#elif defined(__O_PATH)
    return __O_PATH;
#else
    return 0;
#endif
}

/// Linux's F_GETPIPE_SZ, for `fcntl`: a pipe's size in bytes; -1 where there is none (`fcntl`
/// then fails with EINVAL).
static inline int amk_getpipe_sz(void) {
#if defined(F_GETPIPE_SZ)
    return F_GETPIPE_SZ;
#elif defined(__linux__)
    return 1032;  /* glibc defines it for _GNU_SOURCE only; the kernel's value */
#else
    return -1;
#endif
}

/// Linux's AT_EMPTY_PATH: `utimensat` and `fchownat` act on the descriptor itself (an O_PATH one
/// for a symbolic link), not on whatever its name leads to now; 0 where there is none.
static inline int amk_at_empty_path(void) {
#if defined(AT_EMPTY_PATH)
    return AT_EMPTY_PATH;
#elif defined(__linux__)
    return 0x1000;  /* glibc defines it for _GNU_SOURCE only; the kernel's value */
#else
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

static inline int amk_lsetxattr(const char *path, const char *name, const void *value, size_t size) {
#if defined(__APPLE__)
    return setxattr(path, name, value, size, 0, XATTR_NOFOLLOW);
#else
    return lsetxattr(path, name, value, size, 0);
#endif
}

static inline int amk_fsetxattr(int fd, const char *name, const void *value, size_t size) {
#if defined(__APPLE__)
    return fsetxattr(fd, name, value, size, 0, 0);
#else
    return fsetxattr(fd, name, value, size, 0);
#endif
}

/// The name of a directory entry that `readdir` returned, where it lies in readdir's buffer.
/// Swift reads `d_name` as a 256-byte tuple, copying all of it: a record is only as long as its
/// name, so for the last entries of the buffer that copy runs past its end, which crashed `amk
/// pack` in a directory of 1,000 files (the buffer in a thread's malloc arena, with nothing
/// mapped after it). Read the name here, up to its NUL, instead.
const char *amk_dirent_name(const struct dirent *entry);

/// Accepts a connection on `fd` with close-on-exec set atomically (`accept4` on Linux, which
/// Swift's Glibc module hides), so that a process another thread spawns at that moment cannot
/// inherit the connection and hold it open after we close it. Returns the socket, or -1 and errno.
int amk_accept_cloexec(int fd);

/// Starts an extension process: `path` with `argv` and `envp`, in a new session of its own (its
/// pid is the session's id and its process group's; where `POSIX_SPAWN_SETSID` is missing, only a
/// new process group), with every signal at its default disposition and none blocked,
/// `cwd` as working directory, /dev/null as standard input, `output` as standard output and
/// error, `channel` as descriptor 3, and no other descriptor. Returns 0 and the pid in `pid`, or
/// an errno value. Written in C because posix_spawn's GNU extensions (closefrom, chdir) are not
/// imported into Swift.
int amk_spawn_extension(const char *path, char *const argv[], char *const envp[], const char *cwd,
                        int channel, int output, pid_t *pid);

/// The processes that have not exited (zombies excluded) in process group `group` or in session
/// `group`, at most `capacity` of them into `pids`; returns how many there are (which may exceed
/// `capacity`), or -1 where the system cannot tell (then only `kill(-group, 0)` can). An extension
/// is a session's leader, so a process it started that moved to another group of the session
/// with `setpgid` is still found; only one that calls `setsid` leaves.
int amk_process_group_members(pid_t group, pid_t *pids, int capacity);

/// Whether `pid`, a child of this process, has exited, without reaping it (so that its pid, and
/// its process group's id, stay taken): 1 yes, 0 not yet, -1 error (errno set).
int amk_child_has_exited(pid_t pid);

/// Names the calling thread as the system shows it (`top -H`, `ps -L`, debuggers), cut to the
/// 15 bytes Linux keeps. Foundation's `Thread.name` does not reach the system on Linux.
void amk_set_thread_name(const char *name);

/// `lseek(fd, offset, SEEK_DATA)`: where the next data at or after `offset` starts, or -1 with
/// `ENXIO` when only a hole follows. Where the system has no `SEEK_DATA`, -1 with `EINVAL`, as
/// for a file system that cannot tell. (Glibc declares it only under `_GNU_SOURCE`.)
long long amk_seek_data(int fd, long long offset);

#endif
