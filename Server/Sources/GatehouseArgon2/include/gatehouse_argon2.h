#ifndef GATEHOUSE_ARGON2_H
#define GATEHOUSE_ARGON2_H
#include <stddef.h>
#include <stdint.h>

/// Gatehouse's Argon2id (RFC 9106, version 0x13), written from the RFC: BLAKE2b (RFC 7693) for
/// H0 and H', and the block compression G in one vector form compiled three times (AVX-512VL,
/// AVX2, and the platform's baseline: SSE2 on x86-64, NEON on arm64), chosen at run time.
///
/// Unlike libsodium's `crypto_pwhash`, which maps fresh memory for every hash and unmaps it after,
/// the caller passes the working memory, so a hashing thread can keep one region between hashes.

/// The kernels, in the order `gatehouse_argon2_best_kernel` prefers them.
enum {
    GATEHOUSE_ARGON2_KERNEL_PORTABLE = 0,
    GATEHOUSE_ARGON2_KERNEL_AVX2 = 1,
    GATEHOUSE_ARGON2_KERNEL_AVX512 = 2,
    GATEHOUSE_ARGON2_KERNEL_COUNT = 3
};

/// The fastest kernel this CPU runs.
int gatehouse_argon2_best_kernel(void);

/// Whether this CPU (and build) runs `kernel`.
int gatehouse_argon2_kernel_supported(int kernel);

/// The bytes of working memory a hash of `memory_kib` KiB over `lanes` lanes uses (64-byte aligned
/// memory of at least this size is what `gatehouse_argon2id` takes); 0 for parameters out of range.
size_t gatehouse_argon2id_memory_bytes(uint32_t memory_kib, uint32_t lanes);

/// Argon2id of `password` and `salt` into `out` (`out_len` ≥ 4 bytes), with `iterations` passes
/// over `memory_kib` KiB in `lanes` lanes (computed one after the other), on `kernel`.
/// `memory` is the caller's, 64-byte aligned, at least `gatehouse_argon2id_memory_bytes` long;
/// nothing in it is read before it is written. Returns 0, or -1 for parameters RFC 9106 refuses
/// (salt under 8 bytes, memory under 8 KiB a lane, no pass, too little memory given, a kernel
/// this CPU does not run).
int gatehouse_argon2id(
    uint8_t *out, size_t out_len, const uint8_t *password, size_t password_len, const uint8_t *salt, size_t salt_len,
    uint32_t iterations, uint32_t memory_kib, uint32_t lanes, void *memory, size_t memory_len, int kernel);

#endif
