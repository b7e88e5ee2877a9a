// BLAKE2b (RFC 7693), unkeyed, for Argon2id's H0 and H' only: inputs of a few hundred bytes,
// so a plain scalar form is enough. Written from the RFC.
#include "blake2b.h"
#include <string.h>

static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t blake2b_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static inline uint64_t rotr64(uint64_t x, unsigned n) { return (x >> n) | (x << (64 - n)); }

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);  // the targets Gatehouse builds for are little-endian (checked in argon2id.c)
    return v;
}

#define MIX(a, b, c, d, x, y)          \
    do {                               \
        a = a + b + (x);               \
        d = rotr64(d ^ a, 32);         \
        c = c + d;                     \
        b = rotr64(b ^ c, 24);         \
        a = a + b + (y);               \
        d = rotr64(d ^ a, 16);         \
        c = c + d;                     \
        b = rotr64(b ^ c, 63);         \
    } while (0)

static void compress(gatehouse_blake2b *state, const uint8_t block[128], int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load64(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = state->h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= state->t[0];
    v[13] ^= state->t[1];
    if (last) v[14] = ~v[14];
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = blake2b_sigma[r];
        MIX(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        MIX(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        MIX(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        MIX(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        MIX(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        MIX(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        MIX(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        MIX(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) state->h[i] ^= v[i] ^ v[i + 8];
}

void gatehouse_blake2b_init(gatehouse_blake2b *state, size_t out_len) {
    memset(state, 0, sizeof *state);
    for (int i = 0; i < 8; i++) state->h[i] = blake2b_iv[i];
    state->h[0] ^= 0x01010000ULL ^ (uint64_t)out_len;  // no key; fan-out and depth 1
    state->out_len = out_len;
}

void gatehouse_blake2b_update(gatehouse_blake2b *state, const void *input, size_t length) {
    const uint8_t *bytes = input;
    while (length > 0) {
        // A full buffer is compressed only when more input follows: the last block is final's.
        if (state->used == 128) {
            state->t[0] += 128;
            if (state->t[0] < 128) state->t[1]++;
            compress(state, state->buffer, 0);
            state->used = 0;
        }
        size_t take = 128 - state->used;
        if (take > length) take = length;
        memcpy(state->buffer + state->used, bytes, take);
        state->used += take;
        bytes += take;
        length -= take;
    }
}

void gatehouse_blake2b_final(gatehouse_blake2b *state, uint8_t *out) {
    state->t[0] += state->used;
    if (state->t[0] < state->used) state->t[1]++;
    memset(state->buffer + state->used, 0, 128 - state->used);
    compress(state, state->buffer, 1);
    uint8_t digest[64];
    memcpy(digest, state->h, 64);
    memcpy(out, digest, state->out_len);
    gatehouse_wipe(digest, sizeof digest);
    gatehouse_wipe(state, sizeof *state);
}
