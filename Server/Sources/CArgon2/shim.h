#ifndef GATEHOUSE_CARGON2_SHIM_H
#define GATEHOUSE_CARGON2_SHIM_H
#include <argon2.h>
#if defined(__GLIBC__)
#include <malloc.h>
/// glibc's malloc_trim(0): gives free memory in every arena back to the system (`MemoryTrim`).
static inline int gatehouse_malloc_trim(void) { return malloc_trim(0); }
/// The bytes glibc's arenas hold free (mallinfo2's fordblks): what a trim could give back.
static inline size_t gatehouse_malloc_free_bytes(void) { return mallinfo2().fordblks; }
#endif
#endif
