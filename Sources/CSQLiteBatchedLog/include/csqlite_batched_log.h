#ifndef CSQLITE_BATCHED_LOG_H
#define CSQLITE_BATCHED_LOG_H

// A SQLite VFS that wraps the default one and hands each write-ahead log
// transaction to the operating system in two writes instead of two per page
// (batched_log.c explains when the bytes are written).

// Registers the VFS (once; later calls only return its name). Returns its
// name for sqlite3_open_v2, or NULL when it could not be registered.
const char *csqlite_batched_log_vfs(void);

#endif
