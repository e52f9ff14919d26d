/* engine_price.c - pricing without sharing (--sharing none, a machine
 * file, zero-byte messages and messages to oneself): each message is
 * priced alone; one pair's messages queue on its link, and a machine
 * file's exchanges pay its duplex time. */
#include "sim/engine_impl.h"

#include "sim/links.h"
#include "sim/net.h"

/* When the bytes of a message ready at `ready` start moving: the link
 * src -> dst carries one message's bytes at a time (sim/links.h). */
double engine__reserve(sim_engine *e, int src, int dst, double ready, double inject)
{
    /* With shared links, the messages priced here are the zero-byte ones
     * (the barrier's): they keep a link busy 0 / B = 0 seconds (no machine
     * model shares links) and are ready when posted, so every link is free
     * when they come and the table has nothing to say.  Skipping it keeps
     * the barrier of a big run out of a table of every pair it touched. */
    if (src == dst || (e->flows && inject == 0))
        return ready;
    /* Most patterns send to the same peer again and again: the sender keeps
     * its last link's time at hand and the table sees only changes. */
    sim_rank *r = &e->ranks[src];
    if (r->link_dst != dst) {
        double *old = r->link_dst >= 0 ? sim_links_slot(&e->links, src, r->link_dst) : NULL;
        if (old)
            *old = r->link_free;
        double *now = sim_links_slot(&e->links, src, dst);
        if ((r->link_dst >= 0 && !old) || !now) {
            engine__fail(e, CL_ENOMEM, "out of memory in the link table");
            return ready;
        }
        r->link_dst = dst;
        r->link_free = *now;
    }
    double start = engine__later(ready, r->link_free);
    r->link_free = start + inject;
    return start;
}

/* How long the bytes of the message src -> dst that start moving at
 * `start` take to land, `travel` when alone.  On a machine file with
 * duplex segments, a message that moves while its sender receives another
 * or its receiver sends another (an exchange) takes the duplex time
 * instead (sim/net.h).  Times are settled when messages are matched, so
 * the message that starts second pays and the first keeps its time; both
 * ends wait for both in an exchange, so its span is the duplex time.  The
 * barrier between iterations is left out: it is not timed, and a duplex
 * price for one of its messages would make the ranks leave it apart. */
double engine__travel_time(sim_engine *e, const sim_msg *m, double start, double travel)
{
    double duplex;
    if (!m->in_pattern || m->src == m->dst || !sim_net_duplex(e->o->net, m->bytes, &duplex))
        return travel;
    int src = m->src, dst = m->dst;
    sim_rank *s = &e->ranks[src], *d = &e->ranks[dst];
    double end = start + travel;
    if ((start < s->recv_until && s->recv_from < end) ||
        (start < d->send_until && d->send_from < end))
        travel = duplex;
    end = start + travel;
    if (end > s->send_until) {
        s->send_from = start;
        s->send_until = end;
    }
    if (end > d->recv_until) {
        d->recv_from = start;
        d->recv_until = end;
    }
    return travel;
}
