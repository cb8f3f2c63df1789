#ifndef CFUSE_SHIM_H
#define CFUSE_SHIM_H

// The FUSE API version must be fixed before the header is included, and a
// system-library target takes no cSettings, so it is defined here. With 312,
// fuse_session_loop_mt and the fuse_loop_cfg_* functions are real functions.
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <sys/mount.h>

// rename(2) flags as the kernel passes them (linux/fs.h); glibc only defines
// them with _GNU_SOURCE.
static const unsigned int cfuse_rename_noreplace = 1;
static const unsigned int cfuse_rename_exchange = 2;

// The multi-threaded loop is a macro on some builds of libfuse.
static inline int cfuse_session_loop_mt(struct fuse_session *se, struct fuse_loop_config *config) {
    return fuse_session_loop_mt(se, config);
}

// fuse_file_info has bitfields; reading and setting them through small
// functions keeps the Swift side independent of how bitfields are imported.
static inline int cfuse_fi_flags(const struct fuse_file_info *fi) { return fi ? fi->flags : 0; }
static inline uint64_t cfuse_fi_fh(const struct fuse_file_info *fi) { return fi ? fi->fh : 0; }
static inline int cfuse_fi_has(const struct fuse_file_info *fi) { return fi != 0; }
static inline void cfuse_fi_set_open(struct fuse_file_info *fi, uint64_t fh, int keep_cache, int direct_io) {
    fi->fh = fh;
    fi->keep_cache = keep_cache ? 1 : 0;
    fi->direct_io = direct_io ? 1 : 0;
}
static inline void cfuse_fi_set_dir(struct fuse_file_info *fi, uint64_t fh, int cache_readdir, int keep_cache) {
    fi->fh = fh;
    fi->cache_readdir = cache_readdir ? 1 : 0;
    fi->keep_cache = keep_cache ? 1 : 0;
}

// FUSE_ARGS_INIT is a macro.
static inline struct fuse_args cfuse_args(int argc, char **argv) {
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    return args;
}

// The connection's wanted capabilities, set in init. Returns 1 when the
// kernel can do without open/release requests for files (the file system then
// answers the first open with ENOSYS), 0 when every open must be answered.
static inline int cfuse_conn_configure(struct fuse_conn_info *conn, int readdirplus, int skip_opens) {
    // Never cache writes in the kernel: a write is durable when it returns.
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
    // O_TRUNC arrives as its own setattr(size 0), not folded into open: with
    // opens skipped, an atomic O_TRUNC would never reach the file system.
    conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
    if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
    if (readdirplus && (conn->capable & FUSE_CAP_READDIRPLUS)) {
        conn->want |= FUSE_CAP_READDIRPLUS;
        if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO) conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
    }
    // Large writes arrive in one request (fewer transactions per cp).
    if (conn->max_write < 1024 * 1024) conn->max_write = 1024 * 1024;
    return (skip_opens && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT)) ? 1 : 0;
}

static inline int cfuse_errno(void) { return errno; }

// Lazy unmount (MNT_DETACH), for root; returns 0 or -1 with errno set.
static inline int cfuse_lazy_umount(const char *path) { return umount2(path, MNT_DETACH); }
#endif
