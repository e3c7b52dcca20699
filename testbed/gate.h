/* SPDX-License-Identifier: MIT */
/*
 * A one-shot gate between threads: one thread waits until another opens it
 * ("the buffer is handed over", "GL's access is done, act now"). Opening
 * happens-before the wait's return, so what the opener wrote before opening
 * is visible to the waiter. Header-only, no state of its own.
 */
#ifndef TB_GATE_H
#define TB_GATE_H

#include <pthread.h>
#include <stdbool.h>

struct tb_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open; /* under lock */
};

static inline void
tb_gate_init(struct tb_gate *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->open = false;
}

static inline void
tb_gate_open(struct tb_gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->open = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* Returns once the gate is open (at once if it already is). */
static inline void
tb_gate_wait(struct tb_gate *g)
{
	pthread_mutex_lock(&g->lock);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static inline void
tb_gate_finish(struct tb_gate *g)
{
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
}

#endif
