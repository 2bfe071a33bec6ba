#define _GNU_SOURCE
#include "CPlatform.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

const char *amk_dirent_name(const struct dirent *entry) {
    return entry->d_name;
}

int amk_accept_cloexec(int fd) {
#if defined(__linux__)
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
#else
    // No accept4: the window between the two calls stays, as it does for every program there.
    int connection = accept(fd, NULL, NULL);
    if (connection >= 0) fcntl(connection, F_SETFD, FD_CLOEXEC);
    return connection;
#endif
}

int amk_spawn_extension(const char *path, char *const argv[], char *const envp[], const char *cwd,
                        int channel, int output, pid_t *pid) {
    // dup2 onto the same number keeps close-on-exec set, and a low source number could be
    // overwritten by an earlier dup2: move both above the four targets first (closed again
    // below). Above 3, not above 64: under a `ulimit -n` of 64 or less, F_DUPFD past the limit
    // failed with EINVAL, and no extension could start.
    int high_channel = fcntl(channel, F_DUPFD_CLOEXEC, 4);
    if (high_channel < 0) return errno;
    int high_output = fcntl(output, F_DUPFD_CLOEXEC, 4);
    if (high_output < 0 && errno == EBADF) {
        // The host runs with its standard error closed: the extension writes to /dev/null.
        int null_output = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null_output >= 0) {
            high_output = fcntl(null_output, F_DUPFD_CLOEXEC, 4);
            close(null_output);
        }
    }
    if (high_output < 0) {
        int saved = errno;
        close(high_channel);
        return saved;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int status = posix_spawn_file_actions_init(&actions);
    if (status != 0) goto close_high;
    status = posix_spawnattr_init(&attributes);
    if (status != 0) goto destroy_actions;

    // A session of its own, not only a group: a process the extension starts can move to another
    // group of its session with setpgid (and so out of reach of the group's signal), but not to
    // another session without setsid. The host lists and kills the session's members.
#if defined(POSIX_SPAWN_SETSID)
    short flags = POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#else
    short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#endif
#if defined(__APPLE__)
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
#endif
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if ((status = posix_spawnattr_setflags(&attributes, flags)) != 0) goto destroy_all;
#if !defined(POSIX_SPAWN_SETSID)
    if ((status = posix_spawnattr_setpgroup(&attributes, 0)) != 0) goto destroy_all;
#endif
    if ((status = posix_spawnattr_setsigmask(&attributes, &none)) != 0) goto destroy_all;
    if ((status = posix_spawnattr_setsigdefault(&attributes, &all)) != 0) goto destroy_all;

    if ((status = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) != 0) goto destroy_all;
    if ((status = posix_spawn_file_actions_adddup2(&actions, high_output, 1)) != 0) goto destroy_all;
    if ((status = posix_spawn_file_actions_adddup2(&actions, high_output, 2)) != 0) goto destroy_all;
    if ((status = posix_spawn_file_actions_adddup2(&actions, high_channel, 3)) != 0) goto destroy_all;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    if ((status = posix_spawn_file_actions_addclosefrom_np(&actions, 4)) != 0) goto destroy_all;
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
    if ((status = posix_spawn_file_actions_addchdir_np(&actions, cwd)) != 0) goto destroy_all;
#elif defined(__APPLE__)
    if ((status = posix_spawn_file_actions_addchdir_np(&actions, cwd)) != 0) goto destroy_all;
#endif
    status = posix_spawn(pid, path, &actions, &attributes, argv, envp);

destroy_all:
    posix_spawnattr_destroy(&attributes);
destroy_actions:
    posix_spawn_file_actions_destroy(&actions);
close_high:
    close(high_channel);
    close(high_output);
    return status;
}

int amk_process_group_members(pid_t group, pid_t *pids, int capacity) {
#if defined(__linux__)
    DIR *proc = opendir("/proc");
    if (proc == NULL) return -1;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(proc)) != NULL) {
        char *end;
        long pid = strtol(entry->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *file = fopen(path, "re");
        if (file == NULL) continue;
        char line[1024];
        size_t length = fread(line, 1, sizeof line - 1, file);
        fclose(file);
        line[length] = '\0';
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so parse
        // from its last ')'.
        char *close = strrchr(line, ')');
        if (close == NULL) continue;
        char state;
        int parent, process_group, session;
        if (sscanf(close + 1, " %c %d %d %d", &state, &parent, &process_group, &session) != 4) continue;
        if ((process_group != group && session != group) || state == 'Z' || state == 'X') continue;
        if (count < capacity) pids[count] = (pid_t)pid;
        count += 1;
    }
    closedir(proc);
    return count;
#else
    (void)group;
    (void)pids;
    (void)capacity;
    return -1;
#endif
}

int amk_child_has_exited(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
    return info.si_pid == pid ? 1 : 0;
}

void amk_set_thread_name(const char *name) {
    char short_name[16];
    snprintf(short_name, sizeof short_name, "%s", name);
#if defined(__APPLE__)
    pthread_setname_np(short_name);
#else
    pthread_setname_np(pthread_self(), short_name);
#endif
}

long long amk_seek_data(int fd, long long offset) {
#ifdef SEEK_DATA
    return (long long)lseek(fd, (off_t)offset, SEEK_DATA);
#else
    (void)fd;
    (void)offset;
    errno = EINVAL;
    return -1;
#endif
}
