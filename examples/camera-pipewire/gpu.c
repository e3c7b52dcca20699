/* SPDX-License-Identifier: MIT */
/*
 * The producer's "GPU": a thread of its own that does each frame's write
 * after the frame was queued, as a GPU does the work it was given — and,
 * like a slow GPU pass, takes its time: the top half (with the top stamp),
 * a pause of write_ms, the bottom half (with the bottom stamp), and only
 * then the buffer's vgem write fence signals. A reader that does not wait
 * for that fence sees the new top over the old bottom.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera_pw.h"

struct gpu {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a job was queued, or stop */
	pthread_cond_t idle; /* a job was done */
	struct gpu_job *head, **tail;
	bool running; /* a job is being done */
	bool stop;
	int64_t write_ns;
};

void
stamp_write_yuyv(uint8_t *image, uint32_t stride, uint32_t width, uint32_t y0, uint32_t seq)
{
	uint32_t cell = width / STAMP_BITS;

	for (uint32_t y = y0; y < y0 + STAMP_ROWS; y++) {
		uint8_t *row = image + (size_t)y * stride;
		for (uint32_t x = 0; x < cell * STAMP_BITS; x++) {
			uint32_t bit = (seq >> (STAMP_BITS - 1 - x / cell)) & 1;
			row[2 * x] = bit ? 235 : 16; /* Y: white or black */
			row[2 * x + 1] = 128;        /* U or V: no colour */
		}
	}
}

uint32_t
stamp_read_rgba(const uint8_t *row, uint32_t width)
{
	uint32_t cell = width / STAMP_BITS, seq = 0;

	for (uint32_t k = 0; k < STAMP_BITS; k++) {
		const uint8_t *px = row + 4 * (size_t)(k * cell + cell / 2);
		seq = seq << 1 | (px[1] >= 128); /* green: white or black */
	}
	return seq;
}

static void
copy_rows(const struct gpu_job *j, uint32_t from, uint32_t to)
{
	uint32_t bytes = j->width * 2;

	for (uint32_t y = from; y < to; y++)
		memcpy(j->dst + (size_t)y * j->dst_stride, j->src + (size_t)y * j->src_stride,
		       bytes);
}

static void
run_job(struct gpu *g, struct gpu_job *j)
{
	uint32_t half = j->height / 2;

	copy_rows(j, 0, half);
	stamp_write_yuyv(j->dst, j->dst_stride, j->width, 0, j->seq);
	demo_sleep_ns(g->write_ns);
	copy_rows(j, half, j->height);
	stamp_write_yuyv(j->dst, j->dst_stride, j->width, j->height - STAMP_ROWS, j->seq);
	if (j->fence_id) {
		int ret = demo_vgem_fence_signal(j->vgem_fd, j->fence_id);
		if (ret < 0) /* -ETIMEDOUT: vgem's own 10 s timer signalled it first */
			fprintf(stderr, PROG ": producer: vgem fence of frame %u: %s\n", j->seq,
				strerror(-ret));
	}
}

static void *
gpu_main(void *data)
{
	struct gpu *g = data;

	pthread_mutex_lock(&g->lock);
	for (;;) {
		struct gpu_job *j;

		while (!g->head && !g->stop)
			pthread_cond_wait(&g->cond, &g->lock);
		if (!g->head)
			break;
		j = g->head;
		g->head = j->next;
		if (!g->head)
			g->tail = &g->head;
		g->running = true;
		pthread_mutex_unlock(&g->lock);
		run_job(g, j);
		free(j->src);
		free(j);
		pthread_mutex_lock(&g->lock);
		g->running = false;
		pthread_cond_broadcast(&g->idle);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int
gpu_start(unsigned write_ms, struct gpu **out)
{
	struct gpu *g = calloc(1, sizeof(*g));
	int ret;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->tail = &g->head;
	g->write_ns = (int64_t)write_ms * 1000000;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	pthread_cond_init(&g->idle, NULL);
	ret = pthread_create(&g->thread, NULL, gpu_main, g);
	if (ret) {
		pthread_cond_destroy(&g->idle);
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return -ret;
	}
	*out = g;
	return 0;
}

void
gpu_submit(struct gpu *g, struct gpu_job *job)
{
	pthread_mutex_lock(&g->lock);
	job->next = NULL;
	*g->tail = job;
	g->tail = &job->next;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

void
gpu_drain(struct gpu *g)
{
	pthread_mutex_lock(&g->lock);
	while (g->head || g->running)
		pthread_cond_wait(&g->idle, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

void
gpu_stop(struct gpu *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	pthread_cond_destroy(&g->idle);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
