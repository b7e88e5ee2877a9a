#ifndef GATEHOUSE_CARGON2_SHIM_H
#define GATEHOUSE_CARGON2_SHIM_H
#include <argon2.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
/// The calling thread's id (gettid(2)): on Linux, setpriority(PRIO_PROCESS, id, …) with it
/// changes that one thread's niceness (the hashing threads lower their own).
static inline int gatehouse_thread_id(void) { return (int)syscall(SYS_gettid); }
#endif
#if defined(__GLIBC__)
#include <malloc.h>
/// glibc's malloc_trim(0): gives free memory in every arena back to the system (`MemoryTrim`).
static inline int gatehouse_malloc_trim(void) { return malloc_trim(0); }
/// The bytes glibc's arenas hold free (mallinfo2's fordblks): what a trim could give back.
static inline size_t gatehouse_malloc_free_bytes(void) { return mallinfo2().fordblks; }
#endif
#endif
