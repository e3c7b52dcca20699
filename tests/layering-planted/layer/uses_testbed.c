/* Planted: testbed/ in shipped code. */
#include "harness.h"
