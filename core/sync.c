/* sync.c - the window way's start and the clock offsets (sync.h). */
#include "core/sync.h"

#include "core/comm.h"

/* One exchange of the driver's own on c's barrier context: post both,
 * wait for both, give them back.  A NULL buffer sends or receives
 * nothing. */
static int exchange(cl_comm *c, int peer, void *in, size_t in_bytes, int in_tag,
                    const void *out, size_t out_bytes, int out_tag)
{
    cl_request *r[2] = {NULL, NULL};
    int err = c->ops->irecv(c, in, in_bytes, peer, in_tag, c->ctx + 1, &r[0]);
    if (!err)
        err = c->ops->isend(c, out, out_bytes, peer, out_tag, c->ctx + 1, &r[1]);
    if (!err)
        err = c->ops->wait(c, 2, r, WF_BARRIER);
    for (int i = 0; i < 2; i++)
        if (r[i] && r[i]->done)
            c->ops->release(c, r[i]);
    return err;
}

/* One message of the driver's own on c's barrier context, posted and
 * waited for (send, else receive; a NULL buffer carries nothing). */
static int one_way(cl_comm *c, bool send, void *buf, size_t bytes, int peer, int tag)
{
    cl_request *r = NULL;
    int err = send ? c->ops->isend(c, buf, bytes, peer, tag, c->ctx + 1, &r)
                   : c->ops->irecv(c, buf, bytes, peer, tag, c->ctx + 1, &r);
    if (!err)
        err = c->ops->wait(c, 1, &r, WF_BARRIER);
    if (r && r->done)
        c->ops->release(c, r);
    return err;
}

int sync_clock_offset(cl_comm *c, sync_state *s)
{
    /* Rank 0 answers each rank in turn; the others' pings wait for it as
     * unexpected messages.  A ping carries nothing, the answer rank 0's
     * clock when the ping arrived. */
    int ping = COMM_TAG_CLOCK, pong = COMM_TAG_CLOCK + 1;
    if (c->rank == 0) {
        for (int peer = 1; peer < c->size; peer++)
            for (int k = 0; k < SYNC_CLOCK_ROUNDS; k++) {
                int err = one_way(c, false, NULL, 0, peer, ping);
                double t0 = c->ops->now(c);
                if (err || (err = one_way(c, true, &t0, sizeof t0, peer, pong)))
                    return err;
            }
        s->offset = 0;
        s->at = c->ops->now(c);
        s->estimating = true;
        return 0;
    }
    double best_rtt = -1, offset = 0, at = 0;
    for (int k = 0; k < SYNC_CLOCK_ROUNDS; k++) {
        double t0 = 0, ta = c->ops->now(c);
        int err = exchange(c, 0, &t0, sizeof t0, pong, NULL, 0, ping);
        if (err)
            return err;
        double tb = c->ops->now(c);
        if (best_rtt < 0 || tb - ta < best_rtt) {
            best_rtt = tb - ta;
            at = (ta + tb) / 2;
            offset = at - t0;
        }
    }
    /* The rate since the first estimate, once that is long enough ago
     * that the estimates' own errors (half a round trip each) are small
     * next to what the clocks drifted apart in between. */
    if (!s->estimating) {
        s->first_offset = offset;
        s->first_at = at;
    } else if (at - s->first_at >= SYNC_REESTIMATE / 2) {
        s->drift = (offset - s->first_offset) / (at - s->first_at);
    }
    s->offset = offset;
    s->at = at;
    s->estimating = true;
    return 0;
}

int sync_start(cl_comm *c, sync_state *s, sync_spread *prev)
{
    if (s->again) {
        int err = sync_clock_offset(c, s);
        if (err)
            return err;
        s->again = false;
    }
    double now = c->ops->now(c), arrive = now - sync_offset_at(s, now);
    /* Rank 0 asks for a new estimate of the offsets when its own is old. */
    bool old = c->rank == 0 && s->estimating && now - s->at > SYNC_REESTIMATE;
    double v[5] = {arrive + s->window, s->late, -s->late, arrive, old};
    int err = comm_barrier_max(c, v, 5);
    if (err)
        return err;
    prev->first = -v[2];
    prev->last = v[1];
    s->release = v[0];
    s->again = v[4] > 0;
    if (c->ops->settle)
        c->ops->settle(c); /* inside the window, so the window adapts to it */
    now = c->ops->now(c);
    double left = now - sync_offset_at(s, now);
    if (s->window == 0) {
        /* The first barrier: what it took from the last rank's arrival. */
        double took = left - v[3];
        s->window = took > SYNC_WINDOW_MIN ? 2 * took : 2 * SYNC_WINDOW_MIN;
    } else if (left > s->release) {
        /* The barrier outlasted the window: this rank starts late.
         * Doubling, not what this one took, so a rank taken off its core
         * once does not make the next hundreds of starts wait as long. */
        s->window = 2 * s->window;
    } else {
        s->window *= SYNC_SHRINK;
    }
    if (s->window < SYNC_WINDOW_MIN)
        s->window = SYNC_WINDOW_MIN;
    if (s->window > SYNC_WINDOW_MAX)
        s->window = SYNC_WINDOW_MAX;
    c->ops->wait_until(c, s->release + sync_offset_at(s, s->release + s->offset));
    return 0;
}

int sync_finish(cl_comm *c, sync_state *s, sync_spread *prev)
{
    double v[3] = {0, s->late, -s->late};
    int err = comm_barrier_max(c, v, 3);
    if (err)
        return err;
    prev->first = -v[2];
    prev->last = v[1];
    return 0;
}
