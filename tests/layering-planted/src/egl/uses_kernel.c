/* Planted: common/ in a side library. */
#include <common/kernel.h>
