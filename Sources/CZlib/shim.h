#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2 is a macro (it passes the library version and struct size);
// Swift cannot call macros, so it is exposed as a function.
static inline int czlib_deflate_init_gzip(z_streamp stream, int level) {
    // windowBits 15 + 16 asks for a gzip header and trailer; memLevel 8 is the default.
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

static inline int czlib_inflate_init_gzip(z_streamp stream) {
    return inflateInit2(stream, 15 + 16);
}
#endif
