/*
 * sha256.h -- a small SHA-256 (FIPS 180-4) for cache keys and file checksums.
 *
 * Streaming use: qg__sha256_init, any number of qg__sha256_update, then
 * qg__sha256_final. A context is plain data: copying it snapshots the state
 * (jit.c hashes a long constant prefix once and copies the "midstate").
 * Not for secrets (no constant-time care, no wiping).
 */
#ifndef QG_SHA256_H
#define QG_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];       /* chaining state */
    uint64_t bytes;      /* total message length so far */
    uint8_t block[64];   /* pending partial block */
    size_t fill;         /* bytes used in block (< 64 between calls) */
} qg_sha256;

void qg__sha256_init(qg_sha256 *s);
void qg__sha256_update(qg_sha256 *s, const void *data, size_t len);
void qg__sha256_final(qg_sha256 *s, uint8_t digest[32]);

/* One-shot digest of a buffer. */
void qg__sha256(const void *data, size_t len, uint8_t digest[32]);
/* Lower-case hex of a digest: 64 characters plus the terminating NUL. */
void qg__sha256_hex(const uint8_t digest[32], char hex[65]);

#endif /* QG_SHA256_H */
