#ifndef GATEHOUSE_BLAKE2B_H
#define GATEHOUSE_BLAKE2B_H
#include <stddef.h>
#include <stdint.h>

/// An unkeyed BLAKE2b hash in progress (RFC 7693), 1 to 64 bytes of output.
typedef struct {
    uint64_t h[8];
    uint64_t t[2];
    uint8_t buffer[128];
    size_t used;
    size_t out_len;
} gatehouse_blake2b;

void gatehouse_blake2b_init(gatehouse_blake2b *state, size_t out_len);
void gatehouse_blake2b_update(gatehouse_blake2b *state, const void *input, size_t length);
/// Writes `out_len` bytes and wipes the state.
void gatehouse_blake2b_final(gatehouse_blake2b *state, uint8_t *out);

/// Overwrites `length` bytes with zeros through a volatile pointer, so the compiler keeps it.
static inline void gatehouse_wipe(void *memory, size_t length) {
    volatile uint8_t *bytes = memory;
    while (length--) *bytes++ = 0;
}
#endif
