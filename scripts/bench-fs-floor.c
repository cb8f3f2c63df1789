// floorfs: a FUSE file system that does as little as a file system can, so
// that scripts/bench-fs can time what FUSE itself costs on this machine (the
// "floor" column). It keeps its whole tree in memory, never persists
// anything, and answers fsync at once.
//
// It speaks to the kernel exactly as notesfs does (Sources/CFuse/shim.h,
// FuseSession, FuseCallbacks), so the kernel sends it the same requests:
// libfuse's low-level API, multi-threaded loop (8 threads at most, 4 idle),
// no writeback cache, no atomic O_TRUNC, no open/release for files, no flush,
// readdirplus (auto), parallel dirops, async read, 1 MiB writes,
// default_permissions, entry and attribute timeouts of 10 s, negative
// entries cached 1 s, directory listings not cached, xattr requests answered
// as notesfs answers them, so the kernel keeps asking as it does notesfs.
//
// Built on demand by scripts/bench-fs:
//   cc -O2 -o floorfs scripts/bench-fs-floor.c $(pkg-config --cflags --libs fuse3)
// Usage: floorfs MOUNTPOINT PIDFILE   (returns once mounted; unmount with fusermount3 -u)
//
// Built with -DFLOORFS_COMMITS (and -lsqlite3) it is the commit floor: the
// same, except that each write is also committed, as its own transaction, into
// a SQLite database in WAL mode with synchronous=NORMAL (the bytes into 8 KiB
// pieces, as notesfs keeps a large note), and fsync commits with
// synchronous=FULL. That is the least a file system can do that makes every
// acknowledged write a committed transaction.
// Usage: floorfs-commit MOUNTPOINT PIDFILE DATABASE
// For experiments only (bench-fs sets neither): FLOORFS_READDIRPLUS=0 turns
// readdirplus off, FLOORFS_CACHE_READDIR=1 lets the kernel cache listings.
#define FUSE_USE_VERSION 312
#define _GNU_SOURCE
#include <fuse_lowlevel.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#ifdef FLOORFS_COMMITS
#include <sqlite3.h>
#endif

// The same figures notesfs uses (CacheTimeouts, Mounter.workerThreadsMax).
static const double entry_timeout_seconds = 10.0;
static const double attribute_timeout_seconds = 10.0;
static const double negative_entry_timeout_seconds = 1.0;
static const unsigned worker_threads_max = 8;
static const size_t name_bytes_max = 255;
static const size_t file_bytes_max = (size_t)1 << 30;

struct node {
    struct stat st;
    fuse_ino_t parent;
    char *name;
    struct node *next_in_bucket;
    // Files: the bytes. Symlinks: the target (size bytes, no NUL).
    char *bytes;
    size_t capacity;
    // Directories: children in creation order; offsets index this array.
    fuse_ino_t *children;
    size_t child_count, child_capacity;
};

// One lock for everything: the benchmark drives one request at a time, and a
// floor should not pay for finer locking.
static pthread_mutex_t tree_lock = PTHREAD_MUTEX_INITIALIZER;
static struct node **nodes;  // indexed by inode number; [0] unused
static size_t node_count, node_capacity;
enum { bucket_count = 1 << 17 };
static struct node *buckets[bucket_count];
static int wants_readdirplus = 1, caches_listings = 0;

static size_t bucket_of(fuse_ino_t parent, const char *name) {
    uint64_t hash = 1469598103934665603ULL ^ parent;  // FNV-1a over the parent and the name
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) hash = (hash ^ *p) * 1099511628211ULL;
    return (size_t)(hash & (bucket_count - 1));
}

static struct node *node_at(fuse_ino_t ino) {
    return (ino > 0 && ino < node_count) ? nodes[ino] : NULL;
}

static struct node *child_named(fuse_ino_t parent, const char *name) {
    for (struct node *n = buckets[bucket_of(parent, name)]; n; n = n->next_in_bucket)
        if (n->parent == parent && strcmp(n->name, name) == 0) return n;
    return NULL;
}

static void stamp(struct timespec *t) { clock_gettime(CLOCK_REALTIME, t); }

static void touch_directory(struct node *dir) {
    stamp(&dir->st.st_mtim);
    dir->st.st_ctim = dir->st.st_mtim;
}

static int attach(struct node *dir, struct node *n, const char *name) {
    char *copy = strdup(name);
    if (!copy) return ENOMEM;
    if (dir->child_count == dir->child_capacity) {
        size_t capacity = dir->child_capacity ? dir->child_capacity * 2 : 16;
        fuse_ino_t *grown = realloc(dir->children, capacity * sizeof *grown);
        if (!grown) { free(copy); return ENOMEM; }
        dir->children = grown;
        dir->child_capacity = capacity;
    }
    free(n->name);
    n->name = copy;
    n->parent = dir->st.st_ino;
    dir->children[dir->child_count++] = n->st.st_ino;
    size_t b = bucket_of(n->parent, n->name);
    n->next_in_bucket = buckets[b];
    buckets[b] = n;
    if (S_ISDIR(n->st.st_mode)) dir->st.st_nlink++;
    touch_directory(dir);
    return 0;
}

static void detach(struct node *n) {
    struct node *dir = node_at(n->parent);
    if (!dir) return;
    for (struct node **link = &buckets[bucket_of(n->parent, n->name)]; *link; link = &(*link)->next_in_bucket)
        if (*link == n) { *link = n->next_in_bucket; break; }
    for (size_t i = 0; i < dir->child_count; i++)
        if (dir->children[i] == n->st.st_ino) {
            memmove(&dir->children[i], &dir->children[i + 1], (dir->child_count - i - 1) * sizeof(fuse_ino_t));
            dir->child_count--;
            break;
        }
    if (S_ISDIR(n->st.st_mode)) dir->st.st_nlink--;
    touch_directory(dir);
    n->parent = 0;
}

// Removed nodes are never freed: the kernel may still hold their inode
// numbers, and the benchmark's garbage is small.
static struct node *new_node(mode_t mode, fuse_req_t req) {
    if (node_count == node_capacity) {
        size_t capacity = node_capacity ? node_capacity * 2 : 1024;
        struct node **grown = realloc(nodes, capacity * sizeof *grown);
        if (!grown) return NULL;
        nodes = grown;
        node_capacity = capacity;
    }
    struct node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->st.st_ino = node_count;
    n->st.st_mode = mode;
    n->st.st_nlink = S_ISDIR(mode) ? 2 : 1;
    const struct fuse_ctx *context = req ? fuse_req_ctx(req) : NULL;
    n->st.st_uid = context ? context->uid : getuid();
    n->st.st_gid = context ? context->gid : getgid();
    n->st.st_blksize = 4096;
    stamp(&n->st.st_mtim);
    n->st.st_atim = n->st.st_ctim = n->st.st_mtim;
    nodes[node_count++] = n;
    return n;
}

static void fill_entry(struct fuse_entry_param *e, const struct node *n) {
    memset(e, 0, sizeof *e);
    e->ino = n->st.st_ino;
    e->generation = 1;
    e->attr = n->st;
    e->attr.st_blocks = (n->st.st_size + 511) / 512;
    e->attr_timeout = attribute_timeout_seconds;
    e->entry_timeout = entry_timeout_seconds;
}

static void reply_entry_of(fuse_req_t req, const struct node *n) {
    struct fuse_entry_param e;
    fill_entry(&e, n);
    fuse_reply_entry(req, &e);
}

static void reply_attr_of(fuse_req_t req, const struct node *n) {
    struct stat st = n->st;
    st.st_blocks = (st.st_size + 511) / 512;
    fuse_reply_attr(req, &st, attribute_timeout_seconds);
}

static int resize(struct node *n, size_t size) {
    if (size > file_bytes_max) return EFBIG;
    if (size > n->capacity) {
        size_t capacity = n->capacity ? n->capacity : 4096;
        while (capacity < size) capacity *= 2;
        char *grown = realloc(n->bytes, capacity);
        if (!grown) return ENOMEM;
        n->bytes = grown;
        n->capacity = capacity;
    }
    if (size > (size_t)n->st.st_size) memset(n->bytes + n->st.st_size, 0, size - n->st.st_size);
    n->st.st_size = (off_t)size;
    return 0;
}

// MARK: Requests

static void floor_init(void *userdata, struct fuse_conn_info *conn) {
    (void)userdata;
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
    conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
    if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
    if (!wants_readdirplus) conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
    if (wants_readdirplus && (conn->capable & FUSE_CAP_READDIRPLUS)) {
        conn->want |= FUSE_CAP_READDIRPLUS;
        if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO) conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
    }
    if (conn->max_write < 1024 * 1024) conn->max_write = 1024 * 1024;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    if (strlen(name) > name_bytes_max) { fuse_reply_err(req, ENAMETOOLONG); return; }
    pthread_mutex_lock(&tree_lock);
    struct node *n = child_named(parent, name);
    if (n) {
        reply_entry_of(req, n);
    } else {
        struct fuse_entry_param e;
        memset(&e, 0, sizeof e);
        e.entry_timeout = negative_entry_timeout_seconds;
        fuse_reply_entry(req, &e);
    }
    pthread_mutex_unlock(&tree_lock);
}

static void floor_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    (void)ino; (void)nlookup;
    fuse_reply_none(req);
}

static void floor_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
    (void)count; (void)forgets;
    fuse_reply_none(req);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)fi;
    pthread_mutex_lock(&tree_lock);
    struct node *n = node_at(ino);
    if (n) reply_attr_of(req, n); else fuse_reply_err(req, ENOENT);
    pthread_mutex_unlock(&tree_lock);
}

static void floor_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
    (void)fi;
    pthread_mutex_lock(&tree_lock);
    struct node *n = node_at(ino);
    int error = n ? 0 : ENOENT;
    if (!error && (to_set & FUSE_SET_ATTR_SIZE)) {
        error = S_ISREG(n->st.st_mode) ? resize(n, (size_t)attr->st_size) : EISDIR;
        if (!error) stamp(&n->st.st_mtim);
    }
    if (!error) {
        if (to_set & FUSE_SET_ATTR_MODE) n->st.st_mode = (n->st.st_mode & S_IFMT) | (attr->st_mode & 07777);
        if (to_set & FUSE_SET_ATTR_UID) n->st.st_uid = attr->st_uid;
        if (to_set & FUSE_SET_ATTR_GID) n->st.st_gid = attr->st_gid;
        if (to_set & FUSE_SET_ATTR_ATIME) n->st.st_atim = attr->st_atim;
        if (to_set & FUSE_SET_ATTR_ATIME_NOW) stamp(&n->st.st_atim);
        if (to_set & FUSE_SET_ATTR_MTIME) n->st.st_mtim = attr->st_mtim;
        if (to_set & FUSE_SET_ATTR_MTIME_NOW) stamp(&n->st.st_mtim);
        stamp(&n->st.st_ctim);
        reply_attr_of(req, n);
    } else {
        fuse_reply_err(req, error);
    }
    pthread_mutex_unlock(&tree_lock);
}

static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, const char *link_target,
                       struct fuse_file_info *fi) {
    if (strlen(name) > name_bytes_max) { fuse_reply_err(req, ENAMETOOLONG); return; }
    pthread_mutex_lock(&tree_lock);
    struct node *dir = node_at(parent);
    struct node *n = NULL;
    int error = !dir ? ENOENT : !S_ISDIR(dir->st.st_mode) ? ENOTDIR : child_named(parent, name) ? EEXIST : 0;
    if (!error) error = (n = new_node(mode, req)) ? 0 : ENOMEM;
    if (!error && link_target) {
        n->bytes = strdup(link_target);
        n->capacity = n->bytes ? strlen(link_target) : 0;
        n->st.st_size = (off_t)n->capacity;
        if (!n->bytes) error = ENOMEM;
    }
    if (!error) error = attach(dir, n, name);
    if (error) {
        fuse_reply_err(req, error);
    } else if (fi) {
        // As notesfs does when the kernel skips opens: no handle, pages kept.
        struct fuse_entry_param e;
        fill_entry(&e, n);
        fi->fh = 0;
        fi->keep_cache = 1;
        fi->direct_io = 0;
        fuse_reply_create(req, &e, fi);
    } else {
        reply_entry_of(req, n);
    }
    pthread_mutex_unlock(&tree_lock);
}

static void floor_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
    make_entry(req, parent, name, S_IFDIR | (mode & 07777), NULL, NULL);
}

static void floor_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
    make_entry(req, parent, name, S_IFREG | (mode & 07777), NULL, fi);
}

static void floor_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name) {
    make_entry(req, parent, name, S_IFLNK | 0777, target, NULL);
}

static void floor_readlink(fuse_req_t req, fuse_ino_t ino) {
    pthread_mutex_lock(&tree_lock);
    struct node *n = node_at(ino);
    if (!n || !S_ISLNK(n->st.st_mode)) {
        fuse_reply_err(req, EINVAL);
    } else {
        char target[PATH_MAX + 1];
        size_t length = (size_t)n->st.st_size < PATH_MAX ? (size_t)n->st.st_size : PATH_MAX;
        memcpy(target, n->bytes, length);
        target[length] = 0;
        fuse_reply_readlink(req, target);
    }
    pthread_mutex_unlock(&tree_lock);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int directory) {
    pthread_mutex_lock(&tree_lock);
    struct node *n = child_named(parent, name);
    int error = !n ? ENOENT : 0;
    if (!error && directory) error = !S_ISDIR(n->st.st_mode) ? ENOTDIR : n->child_count ? ENOTEMPTY : 0;
    if (!error && !directory && S_ISDIR(n->st.st_mode)) error = EISDIR;
    if (!error) {
        detach(n);
        n->st.st_nlink = 0;
        stamp(&n->st.st_ctim);
    }
    fuse_reply_err(req, error);
    pthread_mutex_unlock(&tree_lock);
}

static void floor_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) { remove_entry(req, parent, name, 0); }

static void floor_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) { remove_entry(req, parent, name, 1); }

static void floor_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t new_parent,
                         const char *new_name, unsigned int flags) {
    if (strlen(new_name) > name_bytes_max) { fuse_reply_err(req, ENAMETOOLONG); return; }
    pthread_mutex_lock(&tree_lock);
    struct node *n = child_named(parent, name);
    struct node *to = node_at(new_parent);
    struct node *replaced = child_named(new_parent, new_name);
    int error = !n || !to ? ENOENT : (flags & RENAME_EXCHANGE) ? EINVAL : 0;
    if (!error && replaced && replaced != n) {
        if (flags & RENAME_NOREPLACE) error = EEXIST;
        else if (S_ISDIR(replaced->st.st_mode) && !S_ISDIR(n->st.st_mode)) error = EISDIR;
        else if (!S_ISDIR(replaced->st.st_mode) && S_ISDIR(n->st.st_mode)) error = ENOTDIR;
        else if (replaced->child_count) error = ENOTEMPTY;
    }
    if (!error && replaced != n) {
        if (replaced) {
            detach(replaced);
            replaced->st.st_nlink = 0;
            stamp(&replaced->st.st_ctim);
        }
        detach(n);
        error = attach(to, n, new_name);
        stamp(&n->st.st_ctim);
    }
    fuse_reply_err(req, error);
    pthread_mutex_unlock(&tree_lock);
}

static void floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino; (void)fi;
    // The kernel offered to skip opens (FUSE_CAP_NO_OPEN_SUPPORT): this answer
    // takes it up, as notesfs does, and no open or release follows.
    fuse_reply_err(req, ENOSYS);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)fi;
    pthread_mutex_lock(&tree_lock);
    struct node *n = node_at(ino);
    if (!n) {
        fuse_reply_err(req, ENOENT);
    } else if (offset >= n->st.st_size) {
        fuse_reply_buf(req, NULL, 0);
    } else {
        size_t available = (size_t)(n->st.st_size - offset);
        fuse_reply_buf(req, n->bytes + offset, size < available ? size : available);
    }
    pthread_mutex_unlock(&tree_lock);
}

#ifdef FLOORFS_COMMITS
static sqlite3 *database;
static sqlite3_stmt *begin_statement, *commit_statement, *piece_statement;
static const size_t piece_bytes = 8192;

static int run_statement(sqlite3_stmt *statement) {
    int status = sqlite3_step(statement);
    sqlite3_reset(statement);
    return status == SQLITE_DONE || status == SQLITE_ROW ? 0 : EIO;
}

static int open_database(const char *path) {
    if (sqlite3_open(path, &database) != SQLITE_OK) return 1;
    if (sqlite3_exec(database,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE IF NOT EXISTS pieces(inode INTEGER, piece INTEGER, bytes BLOB NOT NULL,"
                     " PRIMARY KEY (inode, piece)) WITHOUT ROWID;",
                     NULL, NULL, NULL) != SQLITE_OK)
        return 1;
    return sqlite3_prepare_v2(database, "BEGIN IMMEDIATE", -1, &begin_statement, NULL) != SQLITE_OK ||
           sqlite3_prepare_v2(database, "COMMIT", -1, &commit_statement, NULL) != SQLITE_OK ||
           sqlite3_prepare_v2(database, "INSERT OR REPLACE INTO pieces VALUES (?1, ?2, ?3)", -1, &piece_statement,
                              NULL) != SQLITE_OK;
}

// One transaction: every piece the write touches, rewritten whole from the
// node's bytes (the tree lock is held, so they include this write).
static int commit_write(fuse_ino_t ino, const struct node *n, off_t offset, size_t size) {
    if (run_statement(begin_statement)) return EIO;
    int error = 0;
    size_t end = (size_t)offset + size;
    for (size_t piece = (size_t)offset / piece_bytes; !error && piece * piece_bytes < end; piece++) {
        size_t start = piece * piece_bytes;
        size_t length = (size_t)n->st.st_size - start < piece_bytes ? (size_t)n->st.st_size - start : piece_bytes;
        sqlite3_bind_int64(piece_statement, 1, (sqlite3_int64)ino);
        sqlite3_bind_int64(piece_statement, 2, (sqlite3_int64)piece);
        sqlite3_bind_blob(piece_statement, 3, n->bytes + start, (int)length, SQLITE_STATIC);
        error = run_statement(piece_statement);
    }
    if (error || run_statement(commit_statement)) {
        sqlite3_exec(database, "ROLLBACK", NULL, NULL, NULL);
        return EIO;
    }
    return 0;
}

// As notesfs's fsync: a commit with synchronous=FULL, so the log reaches the disk.
static int commit_durably(void) {
    int failed = sqlite3_exec(database,
                              "PRAGMA synchronous=FULL; BEGIN IMMEDIATE;"
                              " INSERT OR REPLACE INTO pieces VALUES (0, 0, x''); COMMIT;"
                              " PRAGMA synchronous=NORMAL;",
                              NULL, NULL, NULL) != SQLITE_OK;
    return failed ? EIO : 0;
}
#endif

static void floor_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t offset,
                        struct fuse_file_info *fi) {
    (void)fi;
    pthread_mutex_lock(&tree_lock);
    struct node *n = node_at(ino);
    int error = !n ? ENOENT : offset < 0 ? EINVAL : 0;
    size_t end = (size_t)offset + size;
    if (!error && end > (size_t)n->st.st_size) error = resize(n, end);
#ifdef FLOORFS_COMMITS
    if (!error) {
        memcpy(n->bytes + offset, buf, size);
        error = commit_write(ino, n, offset, size);
    }
#endif
    if (!error) {
        memcpy(n->bytes + offset, buf, size);
        stamp(&n->st.st_mtim);
        n->st.st_ctim = n->st.st_mtim;
        fuse_reply_write(req, size);
    } else {
        fuse_reply_err(req, error);
    }
    pthread_mutex_unlock(&tree_lock);
}

static void floor_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
    (void)ino; (void)datasync; (void)fi;
#ifdef FLOORFS_COMMITS
    pthread_mutex_lock(&tree_lock);
    int error = commit_durably();
    pthread_mutex_unlock(&tree_lock);
    fuse_reply_err(req, error);
#else
    fuse_reply_err(req, 0);
#endif
}

static void floor_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    pthread_mutex_lock(&tree_lock);
    struct node *n = node_at(ino);
    pthread_mutex_unlock(&tree_lock);
    if (!n) { fuse_reply_err(req, ENOENT); return; }
    if (!S_ISDIR(n->st.st_mode)) { fuse_reply_err(req, ENOTDIR); return; }
    // Listings are not cached by the kernel, as in notesfs (cachesListings).
    fi->fh = 0;
    fi->cache_readdir = caches_listings;
    fi->keep_cache = caches_listings;
    fuse_reply_open(req, fi);
}

// Offsets: 1 is ".", 2 is "..", and child i has offset i + 3.
static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, int plus) {
    if (size > (1 << 20)) size = 1 << 20;
    char *buffer = malloc(size);
    if (!buffer) { fuse_reply_err(req, ENOMEM); return; }
    pthread_mutex_lock(&tree_lock);
    struct node *dir = node_at(ino);
    if (!dir || !S_ISDIR(dir->st.st_mode)) {
        pthread_mutex_unlock(&tree_lock);
        free(buffer);
        fuse_reply_err(req, dir ? ENOTDIR : ENOENT);
        return;
    }
    size_t used = 0;
    for (off_t position = offset; position < (off_t)dir->child_count + 2; position++) {
        const struct node *n;
        const char *name;
        if (position == 0) { n = dir; name = "."; }
        else if (position == 1) { n = node_at(dir->parent) ? node_at(dir->parent) : dir; name = ".."; }
        else { n = node_at(dir->children[position - 2]); name = n->name; }
        size_t added;
        if (plus) {
            struct fuse_entry_param e;
            fill_entry(&e, n);
            if (position < 2) {
                // No lookup is counted for "." and "..": give no inode to hold.
                e.ino = 0;
                e.entry_timeout = e.attr_timeout = 0;
            }
            added = fuse_add_direntry_plus(req, buffer + used, size - used, name, &e, position + 1);
        } else {
            struct stat st = {.st_ino = n->st.st_ino, .st_mode = n->st.st_mode};
            added = fuse_add_direntry(req, buffer + used, size - used, name, &st, position + 1);
        }
        if (added > size - used) break;
        used += added;
    }
    fuse_reply_buf(req, buffer, used);
    pthread_mutex_unlock(&tree_lock);
    free(buffer);
}

static void floor_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)fi;
    list(req, ino, size, offset, 0);
}

static void floor_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)fi;
    list(req, ino, size, offset, 1);
}

static void floor_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
    (void)ino; (void)datasync; (void)fi;
    fuse_reply_err(req, 0);
}

static void floor_statfs(fuse_req_t req, fuse_ino_t ino) {
    (void)ino;
    struct statvfs st = {0};
    st.f_bsize = st.f_frsize = 4096;
    st.f_blocks = st.f_bfree = st.f_bavail = (fsblkcnt_t)1 << 24;
    st.f_files = st.f_ffree = st.f_favail = (fsfilcnt_t)1 << 24;
    st.f_namemax = name_bytes_max;
    fuse_reply_statfs(req, &st);
}

// Extended attributes: none are kept, but each request is answered as
// notesfs answers it (ENOSYS would make the kernel stop asking, which notesfs
// cannot have it do): a missing user.* name is ENODATA, any other namespace
// EOPNOTSUPP (after which `ls -l` stops asking for ACLs and SELinux labels).
static void floor_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size) {
    (void)ino; (void)size;
    fuse_reply_err(req, strncmp(name, "user.", 5) == 0 ? ENODATA : EOPNOTSUPP);
}

static void floor_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
    (void)ino;
    if (size == 0) fuse_reply_xattr(req, 0); else fuse_reply_buf(req, NULL, 0);
}

static void floor_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
                           int flags) {
    (void)ino; (void)value; (void)size; (void)flags;
    fuse_reply_err(req, strncmp(name, "user.", 5) == 0 ? 0 : EOPNOTSUPP);
}

static void floor_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name) {
    (void)ino; (void)name;
    fuse_reply_err(req, ENODATA);
}

static const struct fuse_lowlevel_ops operations = {
    .init = floor_init,
    .lookup = floor_lookup,
    .forget = floor_forget,
    .forget_multi = floor_forget_multi,
    .getattr = floor_getattr,
    .setattr = floor_setattr,
    .readlink = floor_readlink,
    .mkdir = floor_mkdir,
    .unlink = floor_unlink,
    .rmdir = floor_rmdir,
    .symlink = floor_symlink,
    .rename = floor_rename,
    .open = floor_open,
    .create = floor_create,
    .read = floor_read,
    .write = floor_write,
    .fsync = floor_fsync,
    .opendir = floor_opendir,
    .readdir = floor_readdir,
    .readdirplus = floor_readdirplus,
    .fsyncdir = floor_fsyncdir,
    .statfs = floor_statfs,
    .setxattr = floor_setxattr,
    .getxattr = floor_getxattr,
    .listxattr = floor_listxattr,
    .removexattr = floor_removexattr,
};

int main(int argc, char **argv) {
#ifdef FLOORFS_COMMITS
    if (argc != 4) {
        fprintf(stderr, "usage: %s MOUNTPOINT PIDFILE DATABASE\n", argv[0]);
        return 2;
    }
    // Opened here to report a bad path, and again after the fork below
    // (a SQLite connection must not cross a fork).
    int unusable = open_database(argv[3]);
    if (unusable) fprintf(stderr, "%s: cannot open %s: %s\n", argv[0], argv[3], sqlite3_errmsg(database));
    sqlite3_finalize(begin_statement);
    sqlite3_finalize(commit_statement);
    sqlite3_finalize(piece_statement);
    sqlite3_close(database);
    if (unusable) return 1;
#else
    if (argc != 3) {
        fprintf(stderr, "usage: %s MOUNTPOINT PIDFILE\n", argv[0]);
        return 2;
    }
#endif
    const char *setting = getenv("FLOORFS_READDIRPLUS");
    if (setting && strcmp(setting, "0") == 0) wants_readdirplus = 0;
    setting = getenv("FLOORFS_CACHE_READDIR");
    if (setting && strcmp(setting, "1") == 0) caches_listings = 1;
    struct node *root = new_node(S_IFDIR | 0755, NULL);  // inode 0: never handed out
    root = root ? new_node(S_IFDIR | 0755, NULL) : NULL;  // inode 1: FUSE_ROOT_ID
    if (!root) return 1;
    char *fuse_argv[] = {argv[0], "-o", "fsname=floorfs,subtype=floorfs,default_permissions", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
    struct fuse_session *session = fuse_session_new(&args, &operations, sizeof operations, NULL);
    if (!session) return 1;
    int status = 1;
    if (fuse_set_signal_handlers(session) == 0) {
        if (fuse_session_mount(session, argv[1]) == 0) {
            fuse_daemonize(0);
#ifdef FLOORFS_COMMITS
            if (open_database(argv[3])) {
                fuse_session_unmount(session);
                fuse_remove_signal_handlers(session);
                fuse_session_destroy(session);
                return 1;
            }
#endif
            FILE *pidfile = fopen(argv[2], "w");
            if (pidfile) {
                fprintf(pidfile, "%d\n", (int)getpid());
                fclose(pidfile);
            }
            struct fuse_loop_config *config = fuse_loop_cfg_create();
            if (config) {
                fuse_loop_cfg_set_max_threads(config, worker_threads_max);
                fuse_loop_cfg_set_idle_threads(config, worker_threads_max / 2);
                fuse_loop_cfg_set_clone_fd(config, 0);
                status = fuse_session_loop_mt(session, config) == 0 ? 0 : 1;
                fuse_loop_cfg_destroy(config);
            }
            fuse_session_unmount(session);
        }
        fuse_remove_signal_handlers(session);
    }
    fuse_session_destroy(session);
    return status;
}
