/* Planted: common/ clock in the core. */
#include <syncbridge/ok.h>
#include <clock.h>
#include <wayland-client.h>
