/* pingpong.h - one round trip of the ping-pong, shared with chapter 06's
 * stream of them (pingpong-stream). */
#ifndef CL_PINGPONG_H
#define CL_PINGPONG_H

#include "commlab.h"

/* Rank 0 sends buf's bytes to rank 1 and waits for them back; rank 1
 * receives and returns them; other ranks return at once.  The ping carries
 * the fill of seed, the pong of seed + 1 (checked when checking). */
int pingpong_round(cl_comm *c, unsigned char *buf, size_t bytes, unsigned long long seed);

#endif
