#ifndef NOTESFS_CPOSTGRES_SHIM_H
#define NOTESFS_CPOSTGRES_SHIM_H

#include <libpq-fe.h>
#include <poll.h>

/* Waits up to timeout_ms for the connection's socket to become readable.
   Returns poll()'s result: > 0 readable, 0 timed out, < 0 error. */
static inline int cpostgres_wait_readable(PGconn *conn, int timeout_ms) {
    struct pollfd fd;
    fd.fd = PQsocket(conn);
    fd.events = POLLIN;
    fd.revents = 0;
    if (fd.fd < 0) return -1;
    return poll(&fd, 1, timeout_ms);
}

/* Waits up to timeout_ms until the connection's socket or wake_fd is
   readable. Returns 1 when the connection is readable, 2 when only wake_fd
   is, 0 on a timeout, -1 on an error. */
static inline int cpostgres_wait_readable_or_woken(PGconn *conn, int wake_fd, int timeout_ms) {
    struct pollfd fds[2];
    fds[0].fd = PQsocket(conn);
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    fds[1].fd = wake_fd;
    fds[1].events = POLLIN;
    fds[1].revents = 0;
    if (fds[0].fd < 0) return -1;
    int ready = poll(fds, 2, timeout_ms);
    if (ready <= 0) return ready;
    if (fds[0].revents != 0) return 1;
    return 2;
}

#endif
