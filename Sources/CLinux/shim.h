#include <malloc.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>

/* The Linux calls Glibc's Swift module leaves out: epoll, eventfd and
   inotify (all in libc; nothing to link). `struct epoll_event` is packed on
   x86_64, so Swift never touches it: these wrappers take plain values. */

static const int peersync_epollin = EPOLLIN;
static const int peersync_epollout = EPOLLOUT;
static const int peersync_epollhangup = EPOLLHUP | EPOLLERR | EPOLLRDHUP;

static inline int peersync_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int peersync_epoll_control(int epoll, int operation, int fd, uint32_t events) {
    struct epoll_event event = {.events = events | EPOLLRDHUP, .data = {.fd = fd}};
    return epoll_ctl(epoll, operation, fd, &event);
}

static inline int peersync_epoll_add(int epoll, int fd, uint32_t events) {
    return peersync_epoll_control(epoll, EPOLL_CTL_ADD, fd, events);
}

static inline int peersync_epoll_modify(int epoll, int fd, uint32_t events) {
    return peersync_epoll_control(epoll, EPOLL_CTL_MOD, fd, events);
}

static inline int peersync_epoll_remove(int epoll, int fd) {
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, 0);
}

/* Waits like epoll_wait and writes each ready descriptor and its events
   into two plain arrays of `capacity` entries. */
static inline int peersync_epoll_wait(int epoll, int *fds, uint32_t *events, int capacity, int timeout_ms) {
    struct epoll_event ready[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epoll, ready, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        fds[i] = ready[i].data.fd;
        events[i] = ready[i].events;
    }
    return count;
}

/* accept4 is declared only under _GNU_SOURCE; this shim includes no socket
   header, so it declares it (the address is not asked for). */
extern int accept4(int fd, void *address, void *length, int flags);

/* Accepts a connection with `flags` (SOCK_NONBLOCK, SOCK_CLOEXEC) set from the start. */
static inline int peersync_accept(int listener, int flags) { return accept4(listener, 0, 0, flags); }

static inline int peersync_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

static inline int peersync_inotify(void) { return inotify_init1(IN_CLOEXEC); }

/* Watches a directory for files written, closed, created, moved in or out, or deleted. */
static inline int peersync_inotify_watch_directory(int inotify, const char *path) {
    return inotify_add_watch(inotify, path, IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM);
}

/* Unix signals for an async program: a handler that only writes the
   signal's number to a pipe (async-signal-safe), so that a thread of the
   program reads it. One pipe for the process. */
#include <signal.h>
#include <unistd.h>

static int peersync_signal_pipe = -1;

static void peersync_signal_handler(int number) {
    unsigned char byte = (unsigned char)number;
    if (peersync_signal_pipe >= 0) (void)write(peersync_signal_pipe, &byte, 1);
}

/* Sends `number` to `pipe_write_end` from now on (SA_RESTART). */
static inline int peersync_forward_signal(int number, int pipe_write_end) {
    peersync_signal_pipe = pipe_write_end;
    struct sigaction action;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    action.sa_handler = peersync_signal_handler;
    return sigaction(number, &action, 0);
}

/* Lowers the calling thread's CPU priority by `niceness` (on Linux a nice
   value is per thread); any process may do this to its own threads. */
#include <sys/resource.h>
#include <sys/syscall.h>

static inline int peersync_lower_thread_priority(int niceness) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), niceness);
}

/* The heap of a long-running daemon (docs/storage.md "Memory"): two malloc
   arenas instead of eight per core, and blocks of 256 KiB or more (catch-up
   pages, frames) mapped on their own, so that freeing them gives the memory
   back instead of leaving holes in an arena. */
static inline void peersync_tune_heap(void) {
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}
