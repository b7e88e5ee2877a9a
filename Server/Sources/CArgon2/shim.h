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
#endif
