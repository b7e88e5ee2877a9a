// Argon2id, version 0x13, written from RFC 9106. One lane after another in this thread (each
// slice of every lane is finished before the next slice starts, as the RFC's synchronisation
// requires); Gatehouse hashes with one lane, and checks imported hashes of more.
#include "gatehouse_argon2.h"
#include "blake2b.h"
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "Argon2's blocks are read as little-endian words"
#endif

enum { BLOCK_WORDS = 128, BLOCK_BYTES = 1024, SLICES = 4, ADDRESSES_PER_BLOCK = 128 };

typedef struct {
    uint64_t v[BLOCK_WORDS];
} __attribute__((aligned(64))) block;

// Every function taking or returning a vector below is inlined into one compress function per
// instruction set, so no vector crosses a call: the warning about a 256-bit vector's calling
// convention without AVX has nothing to apply to.
#pragma clang diagnostic ignored "-Wpsabi"

typedef uint64_t v4 __attribute__((vector_size(32)));
typedef uint64_t v2 __attribute__((vector_size(16)));

#define INLINE static inline __attribute__((always_inline))

INLINE v4 load4(const uint64_t *p) {
    v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}
INLINE void store4(uint64_t *p, v4 v) { memcpy(p, &v, sizeof v); }
/// Two 16-byte registers of a column, as one vector.
INLINE v4 load_pair(const uint64_t *first, const uint64_t *second) {
    v2 a, b;
    memcpy(&a, first, sizeof a);
    memcpy(&b, second, sizeof b);
    return __builtin_shufflevector(a, b, 0, 1, 2, 3);
}
INLINE void store_pair(uint64_t *first, uint64_t *second, v4 v) {
    v2 a = __builtin_shufflevector(v, v, 0, 1), b = __builtin_shufflevector(v, v, 2, 3);
    memcpy(first, &a, sizeof a);
    memcpy(second, &b, sizeof b);
}

/// RFC 9106's GB step: BLAKE2b's addition with the product of the low halves added twice.
INLINE v4 blamka(v4 a, v4 b) {
    const v4 low = {0xFFFFFFFFULL, 0xFFFFFFFFULL, 0xFFFFFFFFULL, 0xFFFFFFFFULL};
    v4 product = (a & low) * (b & low);
    return a + b + product + product;
}
#define ROTR(x, n) (((x) >> (v4){n, n, n, n}) | ((x) << (v4){64 - (n), 64 - (n), 64 - (n), 64 - (n)}))
#define GB(a, b, c, d)            \
    do {                          \
        a = blamka(a, b);         \
        d = ROTR(d ^ a, 32);      \
        c = blamka(c, d);         \
        b = ROTR(b ^ c, 24);      \
        a = blamka(a, b);         \
        d = ROTR(d ^ a, 16);      \
        c = blamka(c, d);         \
        b = ROTR(b ^ c, 63);      \
    } while (0)

/// P over sixteen words held as four vectors: the columns' GB, then the diagonals' (the vectors
/// turned so that each lane holds one diagonal), then turned back.
INLINE void permute(v4 *a, v4 *b, v4 *c, v4 *d) {
    v4 A = *a, B = *b, C = *c, D = *d;
    GB(A, B, C, D);
    B = __builtin_shufflevector(B, B, 1, 2, 3, 0);
    C = __builtin_shufflevector(C, C, 2, 3, 0, 1);
    D = __builtin_shufflevector(D, D, 3, 0, 1, 2);
    GB(A, B, C, D);
    B = __builtin_shufflevector(B, B, 3, 0, 1, 2);
    C = __builtin_shufflevector(C, C, 2, 3, 0, 1);
    D = __builtin_shufflevector(D, D, 1, 2, 3, 0);
    *a = A, *b = B, *c = C, *d = D;
}

/// The compression G: next = P(prev ⊕ ref) ⊕ prev ⊕ ref, also ⊕ next's old value in every pass
/// after the first. `ref` and `next` may be the same block.
INLINE void compress_block(const block *prev, const block *ref, block *next, int with_xor) {
    block r, z;
    for (int i = 0; i < BLOCK_WORDS; i += 4) store4(&r.v[i], load4(&prev->v[i]) ^ load4(&ref->v[i]));
    // The rows, from R into Z: eight registers of 16 bytes each, words 16·row to 16·row + 15.
    for (int row = 0; row < 8; row++) {
        const uint64_t *in = &r.v[16 * row];
        uint64_t *w = &z.v[16 * row];
        v4 a = load4(in), b = load4(in + 4), c = load4(in + 8), d = load4(in + 12);
        permute(&a, &b, &c, &d);
        store4(w, a), store4(w + 4, b), store4(w + 8, c), store4(w + 12, d);
    }
    // The columns: register `column` of each row, two words each.
    for (int column = 0; column < 8; column++) {
        uint64_t *w = &z.v[2 * column];
        v4 a = load_pair(w, w + 16), b = load_pair(w + 32, w + 48), c = load_pair(w + 64, w + 80),
           d = load_pair(w + 96, w + 112);
        permute(&a, &b, &c, &d);
        store_pair(w, w + 16, a), store_pair(w + 32, w + 48, b), store_pair(w + 64, w + 80, c),
            store_pair(w + 96, w + 112, d);
    }
    for (int i = 0; i < BLOCK_WORDS; i += 4) {
        v4 out = load4(&z.v[i]) ^ load4(&r.v[i]);
        if (with_xor) out ^= load4(&next->v[i]);
        store4(&next->v[i], out);
    }
}

typedef void (*compress_fn)(const block *, const block *, block *, int);

// One source, compiled for each instruction set: the vectors above become SSE2 or NEON
// registers, AVX2's 256-bit ones, or AVX-512VL's with its rotate instruction.
static void compress_portable(const block *p, const block *r, block *n, int x) { compress_block(p, r, n, x); }
#if defined(__x86_64__)
__attribute__((target("avx2"))) static void compress_avx2(const block *p, const block *r, block *n, int x) {
    compress_block(p, r, n, x);
}
__attribute__((target("avx512f,avx512vl"))) static void compress_avx512(
    const block *p, const block *r, block *n, int x) {
    compress_block(p, r, n, x);
}
#endif

int gatehouse_argon2_kernel_supported(int kernel) {
    switch (kernel) {
    case GATEHOUSE_ARGON2_KERNEL_PORTABLE: return 1;
#if defined(__x86_64__)
    case GATEHOUSE_ARGON2_KERNEL_AVX2: __builtin_cpu_init(); return __builtin_cpu_supports("avx2") != 0;
    case GATEHOUSE_ARGON2_KERNEL_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512vl") != 0;
#endif
    default: return 0;
    }
}

int gatehouse_argon2_best_kernel(void) {
    for (int kernel = GATEHOUSE_ARGON2_KERNEL_COUNT - 1; kernel > 0; kernel--)
        if (gatehouse_argon2_kernel_supported(kernel)) return kernel;
    return GATEHOUSE_ARGON2_KERNEL_PORTABLE;
}

static compress_fn compressor(int kernel) {
    switch (kernel) {
#if defined(__x86_64__)
    case GATEHOUSE_ARGON2_KERNEL_AVX2: return compress_avx2;
    case GATEHOUSE_ARGON2_KERNEL_AVX512: return compress_avx512;
#endif
    default: return compress_portable;
    }
}

size_t gatehouse_argon2id_memory_bytes(uint32_t memory_kib, uint32_t lanes) {
    if (lanes < 1 || lanes > 0xFFFFFF || memory_kib < 8 * lanes) return 0;
    uint64_t blocks = (uint64_t)memory_kib / (SLICES * lanes) * (SLICES * lanes);
    if (blocks > SIZE_MAX / BLOCK_BYTES) return 0;
    return (size_t)blocks * BLOCK_BYTES;
}

static void store32(uint8_t *p, uint32_t value) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(value >> (8 * i));
}

static void update32(gatehouse_blake2b *state, uint32_t value) {
    uint8_t bytes[4];
    store32(bytes, value);
    gatehouse_blake2b_update(state, bytes, 4);
}

/// H' (RFC 9106, 3.3): BLAKE2b stretched to `out_len` bytes.
static void hash_long(uint8_t *out, size_t out_len, const void *input, size_t input_len) {
    gatehouse_blake2b state;
    if (out_len <= 64) {
        gatehouse_blake2b_init(&state, out_len);
        update32(&state, (uint32_t)out_len);
        gatehouse_blake2b_update(&state, input, input_len);
        gatehouse_blake2b_final(&state, out);
        return;
    }
    uint8_t v[64];
    gatehouse_blake2b_init(&state, 64);
    update32(&state, (uint32_t)out_len);
    gatehouse_blake2b_update(&state, input, input_len);
    gatehouse_blake2b_final(&state, v);
    memcpy(out, v, 32);
    out += 32;
    size_t left = out_len - 32;
    while (left > 64) {
        gatehouse_blake2b_init(&state, 64);
        gatehouse_blake2b_update(&state, v, 64);
        gatehouse_blake2b_final(&state, v);
        memcpy(out, v, 32);
        out += 32;
        left -= 32;
    }
    gatehouse_blake2b_init(&state, left);
    gatehouse_blake2b_update(&state, v, 64);
    gatehouse_blake2b_final(&state, out);
    gatehouse_wipe(v, sizeof v);
}

/// Where a block's reference lies within its lane (RFC 9106, 3.4.1.2), from J1.
static uint32_t reference_index(
    uint32_t pass, uint32_t slice, uint32_t index, uint32_t segment, uint32_t lane_length, int same_lane, uint32_t j1) {
    uint64_t area;
    if (pass == 0) area = (uint64_t)slice * segment;
    else area = (uint64_t)lane_length - segment;
    if (same_lane) area += (uint64_t)index - 1;
    else if (index == 0) area -= 1;
    uint64_t x = ((uint64_t)j1 * j1) >> 32;
    uint64_t relative = area - 1 - ((area * x) >> 32);
    uint64_t start = (pass == 0 || slice == SLICES - 1) ? 0 : (uint64_t)(slice + 1) * segment;
    return (uint32_t)((start + relative) % lane_length);
}

typedef struct {
    block *memory;
    compress_fn compress;
    uint32_t passes, lanes, lane_length, segment;
} instance;

/// The next block of data-independent addresses: G(0, G(0, input)) with the counter advanced.
static void next_addresses(const instance *run, block *addresses, block *input, const block *zero) {
    input->v[6]++;
    run->compress(zero, input, addresses, 0);
    run->compress(zero, addresses, addresses, 0);
}

static void fill_segment(const instance *run, uint32_t pass, uint32_t slice, uint32_t lane) {
    // Argon2id: the first half of the first pass takes its references from addresses that do
    // not depend on the password; everything after, from the previous block.
    int independent = pass == 0 && slice < SLICES / 2;
    block zero = {{0}}, input = {{0}}, addresses;
    if (independent) {
        input.v[0] = pass, input.v[1] = lane, input.v[2] = slice;
        input.v[3] = (uint64_t)run->lane_length * run->lanes, input.v[4] = run->passes, input.v[5] = 2;
    }
    uint32_t first = 0;
    if (pass == 0 && slice == 0) {
        first = 2;  // the lane's first two blocks come from H'
        if (independent) next_addresses(run, &addresses, &input, &zero);
    }
    block *lane_start = run->memory + (size_t)lane * run->lane_length;
    for (uint32_t i = first; i < run->segment; i++) {
        uint32_t index = slice * run->segment + i;
        block *current = lane_start + index;
        const block *previous = lane_start + (index == 0 ? run->lane_length - 1 : index - 1);
        uint64_t random;
        if (independent) {
            if (i % ADDRESSES_PER_BLOCK == 0) next_addresses(run, &addresses, &input, &zero);
            random = addresses.v[i % ADDRESSES_PER_BLOCK];
        } else {
            random = previous->v[0];
        }
        uint32_t ref_lane = (pass == 0 && slice == 0) ? lane : (uint32_t)((random >> 32) % run->lanes);
        uint32_t ref_index =
            reference_index(pass, slice, i, run->segment, run->lane_length, ref_lane == lane, (uint32_t)random);
        const block *reference = run->memory + (size_t)ref_lane * run->lane_length + ref_index;
        run->compress(previous, reference, current, pass != 0);
    }
    gatehouse_wipe(&addresses, sizeof addresses);
}

int gatehouse_argon2id(
    uint8_t *out, size_t out_len, const uint8_t *password, size_t password_len, const uint8_t *salt, size_t salt_len,
    uint32_t iterations, uint32_t memory_kib, uint32_t lanes, void *memory, size_t memory_len, int kernel) {
    size_t needed = gatehouse_argon2id_memory_bytes(memory_kib, lanes);
    if (needed == 0 || memory == NULL || memory_len < needed || ((uintptr_t)memory & 63) != 0) return -1;
    if (out == NULL || out_len < 4 || out_len > 0xFFFFFFFFu || salt_len < 8 || salt_len > 0xFFFFFFFFu) return -1;
    if (password_len > 0xFFFFFFFFu || iterations < 1 || !gatehouse_argon2_kernel_supported(kernel)) return -1;

    instance run = {
        .memory = memory, .compress = compressor(kernel), .passes = iterations, .lanes = lanes,
        .lane_length = (uint32_t)(needed / BLOCK_BYTES / lanes),
    };
    run.segment = run.lane_length / SLICES;

    // H0, then each lane's first two blocks: H'(H0 ‖ LE32(0 or 1) ‖ LE32(lane)).
    uint8_t seed[72];
    gatehouse_blake2b state;
    gatehouse_blake2b_init(&state, 64);
    update32(&state, lanes), update32(&state, (uint32_t)out_len), update32(&state, memory_kib);
    update32(&state, iterations), update32(&state, 0x13), update32(&state, 2);
    update32(&state, (uint32_t)password_len);
    gatehouse_blake2b_update(&state, password, password_len);
    update32(&state, (uint32_t)salt_len);
    gatehouse_blake2b_update(&state, salt, salt_len);
    update32(&state, 0), update32(&state, 0);  // no secret, no associated data
    gatehouse_blake2b_final(&state, seed);
    for (uint32_t lane = 0; lane < lanes; lane++) {
        for (uint32_t column = 0; column < 2; column++) {
            store32(seed + 64, column);
            store32(seed + 68, lane);
            hash_long((uint8_t *)(run.memory + (size_t)lane * run.lane_length + column), BLOCK_BYTES, seed, sizeof seed);
        }
    }

    for (uint32_t pass = 0; pass < iterations; pass++)
        for (uint32_t slice = 0; slice < SLICES; slice++)
            for (uint32_t lane = 0; lane < lanes; lane++) fill_segment(&run, pass, slice, lane);

    // The tag: H' of the lanes' last blocks XORed together.
    block last = run.memory[run.lane_length - 1];
    for (uint32_t lane = 1; lane < lanes; lane++)
        for (int i = 0; i < BLOCK_WORDS; i++) last.v[i] ^= run.memory[(size_t)lane * run.lane_length + run.lane_length - 1].v[i];
    hash_long(out, out_len, &last, sizeof last);
    gatehouse_wipe(&last, sizeof last);
    gatehouse_wipe(seed, sizeof seed);
    return 0;
}
