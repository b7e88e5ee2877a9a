#ifndef GATEHOUSE_CSODIUM_SHIM_H
#define GATEHOUSE_CSODIUM_SHIM_H
#include <sodium.h>
#endif
