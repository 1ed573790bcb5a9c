#ifndef REALTIME_CZLIB_SHIM_H
#define REALTIME_CZLIB_SHIM_H
// The system zlib for permessage-deflate (RFC 7692): zlib1g-dev on Debian, the SDK's libz on Apple platforms.
#include <zlib.h>

// inflateInit2 and deflateInit2 are function-like macros, which do not import into Swift. Both streams are
// raw DEFLATE (negative window bits): permessage-deflate carries no zlib header or checksum.
static inline int realtime_inflate_init_raw(z_streamp stream, int windowBits) {
    return inflateInit2(stream, -windowBits);
}
static inline int realtime_deflate_init_raw(z_streamp stream, int level, int windowBits, int memLevel) {
    return deflateInit2(stream, level, Z_DEFLATED, -windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
#endif
