#ifndef GATEHOUSE_CARGON2_SHIM_H
#define GATEHOUSE_CARGON2_SHIM_H
#include <argon2.h>
#endif
