/* Planted: src/ beyond private.h in common/ (private.h is allowed). */
#include <core/private.h>
#include <core/util.h>
