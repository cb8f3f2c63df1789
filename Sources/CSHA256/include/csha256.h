#ifndef CSHA256_H
#define CSHA256_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU has the SHA extensions (and SSE4.1) the kernel below uses.
int csha256_has_instructions(void);

/// Runs SHA-256's compression over `blocks` whole 64-byte blocks at `data`,
/// updating `state` (the eight working words, in FIPS 180-4 order). Only to be
/// called when `csha256_has_instructions()` is 1.
void csha256_compress(uint32_t state[8], const uint8_t *data, size_t blocks);

#endif
