// A VFS over the default one that batches the writes SQLite makes to the
// write-ahead log.
//
// SQLite writes each page of a transaction to the log as two writes (a
// 24-byte frame header, then the page), so a commit of 18 pages is 36
// pwrite calls, which cost the mount more CPU than the SQL that made them.
// Here the log's writes are copied into a buffer while they are contiguous
// and handed to the default VFS as one write, at the latest when:
//   - the header of a commit frame is written (its database size field is
//     not zero): the buffer goes out with it, and the next write, the commit
//     frame's page, goes straight through. SQLite makes a transaction
//     visible to readers (the wal-index header in shared memory) only after
//     it wrote the commit frame, so every frame is in the file by then, and
//     a commit still has its bytes in the operating system before it
//     returns, as without this VFS;
//   - a write is not contiguous with the buffer (a page written twice in a
//     transaction is rewritten in place), or does not fit in it;
//   - anything else is asked of the file (read, sync, truncate, size, lock,
//     file control, close).
// Writes reach the file in the order SQLite made them. Files other than
// write-ahead logs are opened with the default VFS's own methods.
#include "csqlite_batched_log.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <string.h>

enum {
    frame_header_bytes = 24,
    // Below 128 KiB: the unix VFS masks a write's count with 0x1ffff, so a
    // write of exactly 128 KiB would write nothing (and report a full disk).
    // A commit of a created note (about 20 pages) fits.
    buffer_capacity = 120 * 1024,
};

typedef struct BatchedLogFile {
    sqlite3_file base;
    sqlite3_file *real;
    // False when writes go straight through: a read-only log, a device
    // without powersafe overwrite (SQLite then pads a commit to a sector
    // boundary with writes split anywhere, which the rule above does not
    // follow), or no memory for the buffer.
    int batching;
    unsigned char *buffer;
    int buffered;
    sqlite3_int64 buffer_offset;
    // The next write is a commit frame's page: it goes straight through.
    int write_next_through;
} BatchedLogFile;

static sqlite3_vfs batched_vfs;
static sqlite3_vfs *real_vfs;

static sqlite3_int64 real_file_offset(void) {
    // The real file follows ours, aligned for any type it holds.
    size_t align = sizeof(sqlite3_int64) > sizeof(void *) ? sizeof(sqlite3_int64) : sizeof(void *);
    return (sqlite3_int64)((sizeof(BatchedLogFile) + align - 1) / align * align);
}

static int flush(BatchedLogFile *file) {
    if (file->buffered == 0) return SQLITE_OK;
    int amount = file->buffered;
    file->buffered = 0;
    return file->real->pMethods->xWrite(file->real, file->buffer, amount, file->buffer_offset);
}

static int batched_close(sqlite3_file *handle) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int flushed = flush(file);
    int closed = file->real->pMethods->xClose(file->real);
    sqlite3_free(file->buffer);
    file->buffer = NULL;
    return flushed != SQLITE_OK ? flushed : closed;
}

static int batched_read(sqlite3_file *handle, void *out, int amount, sqlite3_int64 offset) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xRead(file->real, out, amount, offset);
}

static int is_commit_frame_header(const void *bytes, int amount) {
    if (amount != frame_header_bytes) return 0;
    const unsigned char *header = bytes;
    return (header[4] | header[5] | header[6] | header[7]) != 0;
}

static int batched_write(sqlite3_file *handle, const void *bytes, int amount, sqlite3_int64 offset) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int rc;
    if (file->batching && file->buffer == NULL) {
        file->buffer = sqlite3_malloc(buffer_capacity);
        file->batching = file->buffer != NULL;
    }
    if (!file->batching || file->write_next_through || amount > buffer_capacity) {
        file->write_next_through = 0;
        rc = flush(file);
        if (rc != SQLITE_OK) return rc;
        return file->real->pMethods->xWrite(file->real, bytes, amount, offset);
    }
    if (file->buffered > 0
        && (offset != file->buffer_offset + file->buffered || file->buffered + amount > buffer_capacity)) {
        rc = flush(file);
        if (rc != SQLITE_OK) return rc;
    }
    if (file->buffered == 0) file->buffer_offset = offset;
    memcpy(file->buffer + file->buffered, bytes, (size_t)amount);
    file->buffered += amount;
    if (is_commit_frame_header(bytes, amount)) {
        file->write_next_through = 1;
        return flush(file);
    }
    return SQLITE_OK;
}

static int batched_truncate(sqlite3_file *handle, sqlite3_int64 size) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xTruncate(file->real, size);
}

static int batched_sync(sqlite3_file *handle, int flags) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xSync(file->real, flags);
}

static int batched_file_size(sqlite3_file *handle, sqlite3_int64 *size) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFileSize(file->real, size);
}

static int batched_lock(sqlite3_file *handle, int level) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xLock(file->real, level);
}

static int batched_unlock(sqlite3_file *handle, int level) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xUnlock(file->real, level);
}

static int batched_check_reserved_lock(sqlite3_file *handle, int *reserved) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    return file->real->pMethods->xCheckReservedLock(file->real, reserved);
}

static int batched_file_control(sqlite3_file *handle, int operation, void *argument) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFileControl(file->real, operation, argument);
}

static int batched_sector_size(sqlite3_file *handle) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    return file->real->pMethods->xSectorSize(file->real);
}

static int batched_device_characteristics(sqlite3_file *handle) {
    BatchedLogFile *file = (BatchedLogFile *)handle;
    return file->real->pMethods->xDeviceCharacteristics(file->real);
}

// Version 1: a log has no shared memory and is never memory-mapped.
static const sqlite3_io_methods batched_log_methods = {
    .iVersion = 1,
    .xClose = batched_close,
    .xRead = batched_read,
    .xWrite = batched_write,
    .xTruncate = batched_truncate,
    .xSync = batched_sync,
    .xFileSize = batched_file_size,
    .xLock = batched_lock,
    .xUnlock = batched_unlock,
    .xCheckReservedLock = batched_check_reserved_lock,
    .xFileControl = batched_file_control,
    .xSectorSize = batched_sector_size,
    .xDeviceCharacteristics = batched_device_characteristics,
};

static int batched_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *handle, int flags, int *out_flags) {
    (void)vfs;
    if (!(flags & SQLITE_OPEN_WAL)) {
        // Not a log: the default VFS's file, in place, with its own methods.
        return real_vfs->xOpen(real_vfs, name, handle, flags, out_flags);
    }
    BatchedLogFile *file = (BatchedLogFile *)handle;
    memset(file, 0, sizeof *file);
    file->real = (sqlite3_file *)((char *)handle + real_file_offset());
    int rc = real_vfs->xOpen(real_vfs, name, file->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        // SQLite calls no method of a file whose open failed.
        handle->pMethods = NULL;
        return rc;
    }
    int characteristics = file->real->pMethods->xDeviceCharacteristics(file->real);
    file->batching = !(flags & SQLITE_OPEN_READONLY) && (characteristics & SQLITE_IOCAP_POWERSAFE_OVERWRITE);
    handle->pMethods = &batched_log_methods;
    return SQLITE_OK;
}

static int batched_delete(sqlite3_vfs *vfs, const char *name, int sync_directory) {
    (void)vfs;
    return real_vfs->xDelete(real_vfs, name, sync_directory);
}

static int batched_access(sqlite3_vfs *vfs, const char *name, int flags, int *result) {
    (void)vfs;
    return real_vfs->xAccess(real_vfs, name, flags, result);
}

static int batched_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return real_vfs->xFullPathname(real_vfs, name, size, out);
}

static void *batched_dl_open(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return real_vfs->xDlOpen(real_vfs, name);
}

static void batched_dl_error(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    real_vfs->xDlError(real_vfs, size, out);
}

static void (*batched_dl_sym(sqlite3_vfs *vfs, void *library, const char *symbol))(void) {
    (void)vfs;
    return real_vfs->xDlSym(real_vfs, library, symbol);
}

static void batched_dl_close(sqlite3_vfs *vfs, void *library) {
    (void)vfs;
    real_vfs->xDlClose(real_vfs, library);
}

static int batched_randomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return real_vfs->xRandomness(real_vfs, size, out);
}

static int batched_sleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return real_vfs->xSleep(real_vfs, microseconds);
}

static int batched_current_time(sqlite3_vfs *vfs, double *now) {
    (void)vfs;
    return real_vfs->xCurrentTime(real_vfs, now);
}

static int batched_get_last_error(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, size, out) : 0;
}

static int batched_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *now) {
    (void)vfs;
    return real_vfs->xCurrentTimeInt64(real_vfs, now);
}

static const char batched_vfs_name[] = "notesfs-batched-log";
static pthread_once_t registration = PTHREAD_ONCE_INIT;
static int registered;

static void register_vfs(void) {
    real_vfs = sqlite3_vfs_find(NULL);
    // The default VFS must be version 2 or later (xCurrentTimeInt64), as unix is.
    if (real_vfs == NULL || real_vfs->iVersion < 2 || real_vfs->xCurrentTimeInt64 == NULL) return;
    batched_vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)real_file_offset() + real_vfs->szOsFile,
        .mxPathname = real_vfs->mxPathname,
        .zName = batched_vfs_name,
        .xOpen = batched_open,
        .xDelete = batched_delete,
        .xAccess = batched_access,
        .xFullPathname = batched_full_pathname,
        .xDlOpen = batched_dl_open,
        .xDlError = batched_dl_error,
        .xDlSym = batched_dl_sym,
        .xDlClose = batched_dl_close,
        .xRandomness = batched_randomness,
        .xSleep = batched_sleep,
        .xCurrentTime = batched_current_time,
        .xGetLastError = batched_get_last_error,
        .xCurrentTimeInt64 = batched_current_time_int64,
    };
    registered = sqlite3_vfs_register(&batched_vfs, 0) == SQLITE_OK;
}

const char *csqlite_batched_log_vfs(void) {
    pthread_once(&registration, register_vfs);
    return registered ? batched_vfs_name : NULL;
}
