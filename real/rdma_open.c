/*
 * rdma_open.c - the rdma transport's opening and closing (real/rdma.h says
 * which file does what): the launcher's shared area (the provider, whose
 * matching, the shm region names), a rank's endpoint, completion queue and
 * address vector, the address exchange through the job's slots, the
 * receives every rank keeps posted, and the closing handshake (BYE).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "real/boot.h"
#include "real/rdma_impl.h"
#include "real/world.h"
#include "real/xfer.h"

#define CTRL_RECVS 64                /* control receives kept posted (libfabric's matching) */
#define BOUNCE_KEEP_MAX ((size_t)1 << 20) /* eager copies are kept when the largest is at most this */
#define CLOSE_SECONDS 2.0            /* the closing handshake waits at most this */

/* ---- the shm provider's regions in /dev/shm ---- */

#define SHM_DIR "/dev/shm"

/* The launcher's pid in a region name of ours, "commlab-PID-NONCE-RANK"
 * (NONCE: 16 hex digits), or 0 when name is not one. */
static pid_t region_owner(const char *name)
{
    const char *p = name;
    if (strncmp(p, "commlab-", 8) != 0)
        return 0;
    p += 8;
    long pid = 0;
    for (; isdigit((unsigned char)*p) && pid < 1L << 30; p++)
        pid = pid * 10 + (*p - '0');
    if (pid <= 0 || *p++ != '-')
        return 0;
    for (int i = 0; i < 16; i++, p++)
        if (!isxdigit((unsigned char)*p))
            return 0;
    if (*p++ != '-' || !isdigit((unsigned char)*p))
        return 0;
    while (isdigit((unsigned char)*p))
        p++;
    return *p ? 0 : (pid_t)pid;
}

/* Removes this user's regions whose launcher is gone (killed outright, it
 * could not remove them; its ranks died with it).  A launcher's pid taken
 * by another process since keeps its regions until that one ends: never
 * a live run's.  Cannot fail: what cannot be removed stays. */
static void reap_orphan_regions(void)
{
    DIR *dir = opendir(SHM_DIR);
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        pid_t owner = region_owner(e->d_name);
        struct stat st;
        if (!owner || fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (kill(owner, 0) < 0 && errno == ESRCH)
            shm_unlink(e->d_name);
    }
    closedir(dir);
}

/* ---- opening and closing ---- */

static size_t rdma_shared_bytes(const real_opts *o)
{
    (void)o;
    return sizeof(rdma_area);
}

static int rdma_shared_init(void *mem, const real_opts *o, cl_diag *d)
{
    rdma_area *a = mem;
    if (o->job.nranks > RDMA_MAX_RANKS)
        return diag_set(d, CL_EINVAL, "the rdma backend runs at most %d ranks, got %d",
                        RDMA_MAX_RANKS, o->job.nranks);
    const char *want = o->rdma.provider && *o->rdma.provider ? o->rdma.provider : "auto";
    int err = rdma_provider_check(want, d);
    if (err)
        return err;
    /* A world whose rendezvous is reached through a non-loopback address
     * may span hosts: its endpoints bind to that address's interface (the
     * loopback one that local runs pick would be unreachable), and auto
     * picks a NIC provider. */
    const char *reach = o->boot ? boot_listen_addr(o->boot) : NULL;
    bool multi_host = reach && !world_is_loopback(reach);
    if (multi_host)
        snprintf(a->source, sizeof a->source, "%s", reach);
    if (strcmp(want, "auto") == 0)
        err = rdma_provider_auto(a->provider, sizeof a->provider, multi_host, d);
    else
        snprintf(a->provider, sizeof a->provider, "%s", want);
    if (err)
        return err;
    /* Whose matching: commlab's where the provider's is known to lose
     * messages (rdma_info.c), or where the run asks. */
    a->own_match = o->rdma.own_match || rdma__own_match(a->provider);
    /* With RDMA reads if the provider has them. */
    struct fi_info *hints = rdma__hints(a->provider, true, a->own_match), *list = NULL;
    if (!hints)
        return diag_set(d, CL_ENOMEM, "out of memory");
    int ret = fi_getinfo(RDMA_FI_VERSION, NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    bool has_rma = ret == 0 && list;
    a->use_rma = has_rma && !o->rdma.no_rma;
    /* Senders count the reads of their buffers where commlab matches
     * (rdma.c) and the provider counts remote reads (FI_RMA_EVENT): only
     * on shm, whose counter was read in its source to count every read of
     * a rank's memory once, whatever path the read took, and nothing else
     * (a counter that counted more would complete a send too early). */
    a->count_reads = a->use_rma && a->own_match && strcmp(a->provider, "shm") == 0 &&
                     (list->caps & FI_RMA_EVENT);
    if (list)
        fi_freeinfo(list);
    if (!has_rma && o->warn)
        fprintf(o->warn, "commlab: provider '%s' has no RDMA reads: messages above the eager "
                "limit move as tagged messages after a clear-to-send\n", a->provider);
    a->nranks = (uint32_t)o->job.nranks;
    reap_orphan_regions();
    /* Names no other run can have: the launcher's pid (by which a later
     * run knows whether these are orphans) and 64 random bits. */
    unsigned long long nonce = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&nonce, sizeof nonce, 1, f) != 1)
        nonce = (unsigned long long)(job_now() * 1e9);
    if (f)
        fclose(f);
    snprintf(a->region_prefix, sizeof a->region_prefix, "commlab-%d-%016llx", (int)getpid(),
             nonce);
    return 0;
}

/* What a killed rank's shm provider left in /dev/shm goes. */
static void rdma_shared_release(void *mem, const real_opts *o)
{
    rdma_area *a = mem;
    if (!a->region_prefix[0])
        return;
    for (int i = 0; i < o->job.nranks; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s-%d", a->region_prefix, i);
        shm_unlink(name);
    }
}

static void rdma_rank_close(real_rank *base);

static int open_fail(rdma_rank *t, int err)
{
    t->closing = true;
    rdma_rank_close(&t->x.base);
    return err;
}

/* The provider's description for this rank into t->info, with what
 * follows from it (its name, inject size, largest message).  0, or the
 * error with d saying why. */
static int get_info(rdma_rank *t, cl_diag *d)
{
    struct fi_info *hints = rdma__hints(t->area->provider, t->area->use_rma, t->own_match);
    struct fi_info *list = NULL;
    if (!hints)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", t->me);
    if (t->area->count_reads)
        hints->caps |= FI_RMA_EVENT;
    const char *source = t->area->source[0] ? t->area->source : NULL;
    int ret = fi_getinfo(RDMA_FI_VERSION, source, NULL, source ? FI_SOURCE : 0, hints, &list);
    fi_freeinfo(hints);
    if (ret || !list)
        return rdma__fail(d, CL_EIO, "fi_getinfo", ret ? ret : -FI_ENODATA,
                          "rank %d: provider '%s'%s%s", t->me, t->area->provider,
                          source ? " on " : "", source ? source : "");
    t->info = fi_dupinfo(source ? list : rdma__pick(list));
    fi_freeinfo(list);
    if (!t->info)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", t->me);
    struct fi_info *fi = t->info;
    rdma__prov_name(fi, t->prov, sizeof t->prov);
    t->inject = fi->tx_attr->inject_size < INJECT_MAX ? fi->tx_attr->inject_size : INJECT_MAX;
    t->max_msg = fi->ep_attr->max_msg_size ? fi->ep_attr->max_msg_size : READ_CHUNK;
    if (fi->rx_attr->iov_limit < 3)
        return diag_set(d, CL_EINVAL, "rank %d: provider '%s' takes %zu pieces per receive; "
                        "commlab needs three (a header, the data, what overflows)", t->me,
                        t->prov, fi->rx_attr->iov_limit);
    return 0;
}

static int open_endpoint(rdma_rank *t, cl_diag *d)
{
    /* The launcher loaded libfabric before it forked (rdma_shared_init);
     * a no-op, unless this rank was started another way. */
    if (rdma__lib_load(d))
        return CL_ENOSYS;
    int ret = get_info(t, d);
    if (ret)
        return ret;
    struct fi_info *fi = t->info;
    if ((ret = fi_fabric(fi->fabric_attr, &t->fabric, NULL)))
        return rdma__fail(d, CL_EIO, "fi_fabric", ret, "rank %d", t->me);
    if ((ret = fi_domain(t->fabric, fi, &t->domain, NULL)))
        return rdma__fail(d, CL_EIO, "fi_domain", ret, "rank %d", t->me);
    rdma__mr_init(&t->mrs, t->domain, fi->domain_attr->mr_mode);
    struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC,
                            .size = 4096};
    t->cq_waits = true;
    if (fi_cq_open(t->domain, &cq, &t->cq, NULL)) {
        cq.wait_obj = FI_WAIT_NONE; /* poll, with short sleeps when blocked */
        t->cq_waits = false;
        if ((ret = fi_cq_open(t->domain, &cq, &t->cq, NULL)))
            return rdma__fail(d, CL_EIO, "fi_cq_open", ret, "rank %d", t->me);
    }
    struct fi_av_attr av = {.type = FI_AV_TABLE, .count = (size_t)t->n};
    if ((ret = fi_av_open(t->domain, &av, &t->av, NULL)))
        return rdma__fail(d, CL_EIO, "fi_av_open", ret, "rank %d", t->me);
    if ((ret = fi_endpoint(t->domain, fi, &t->ep, NULL)))
        return rdma__fail(d, CL_EIO, "fi_endpoint", ret, "rank %d", t->me);
    if ((ret = fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (ret = fi_ep_bind(t->ep, &t->av->fid, 0)))
        return rdma__fail(d, CL_EIO, "fi_ep_bind", ret, "rank %d", t->me);
    if (t->area->count_reads) {
        struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE};
        if ((ret = fi_cntr_open(t->domain, &ca, &t->reads, NULL)))
            return rdma__fail(d, CL_EIO, "fi_cntr_open", ret, "rank %d", t->me);
        if ((ret = fi_ep_bind(t->ep, &t->reads->fid, FI_REMOTE_READ)))
            return rdma__fail(d, CL_EIO, "fi_ep_bind", ret, "rank %d: the remote-read counter",
                              t->me);
    }
    if (strcmp(t->prov, "shm") == 0) {
        /* A region name the launcher knows, so it can remove what a
         * killed rank leaves in /dev/shm. */
        char name[96];
        snprintf(name, sizeof name, "%s-%d", t->area->region_prefix, t->me);
        if ((ret = fi_setname(&t->ep->fid, name, strlen(name) + 1)))
            return rdma__fail(d, CL_EIO, "fi_setname", ret, "rank %d", t->me);
    }
    t->read_flags = FI_COMPLETION;
    if ((ret = fi_enable(t->ep)))
        return rdma__fail(d, CL_EIO, "fi_enable", ret, "rank %d", t->me);
    if (t->own_match) {
        /* A pool buffer is given back once it has no room for the largest
         * message: none is ever truncated.  (After fi_enable: libfabric
         * 1.17's shm provider crashes on it before.) */
        size_t min = t->pool_msg_max;
        if ((ret = fi_setopt(&t->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
                             sizeof min)))
            return rdma__fail(d, CL_EIO, "fi_setopt(FI_OPT_MIN_MULTI_RECV)", ret, "rank %d",
                              t->me);
    }
    return 0;
}

/* Publishes this rank's endpoint address in the job's address slot and
 * inserts every rank's into the address vector (the launcher relays the
 * slots of other hosts: real/boot.h). */
static int exchange_addresses(rdma_rank *t, const job *j, cl_diag *d)
{
    unsigned char addr[JOB_ADDR_MAX] = {0};
    size_t len = sizeof addr;
    int ret = fi_getname(&t->ep->fid, addr, &len);
    if (ret)
        return rdma__fail(d, CL_EIO, "fi_getname", ret, "rank %d", t->me);
    job_addr_publish(j, t->me, addr, len);
    double deadline = job_now() + BOOT_SECONDS;
    for (int i = 0; i < t->n; i++) {
        int err = job_addr_wait(j, i, addr, sizeof addr, &len, deadline);
        if (err)
            return diag_set(d, err, "rank %d: rank %d %s", t->me, i,
                            err == CL_ETIMEOUT ? "published no address in time"
                                               : "published a bad address");
        ret = fi_av_insert(t->av, addr, 1, &t->addr[i], 0, NULL);
        if (ret != 1)
            return rdma__fail(d, CL_EIO, "fi_av_insert", ret < 0 ? ret : -FI_EINVAL,
                              "rank %d: the address of rank %d", t->me, i);
        /* Commlab's matching reads a short envelope's source from the
         * completion's address (FI_SOURCE): an FI_AV_TABLE index. */
        if (t->own_match && t->addr[i] != (fi_addr_t)i)
            return diag_set(d, CL_EIO, "rank %d: the address vector put rank %d at %llu",
                            t->me, i, (unsigned long long)t->addr[i]);
    }
    return 0;
}

/* The receives every rank keeps posted: control receives (libfabric's
 * matching) or the pool buffers (commlab's). */
static int post_standing(rdma_rank *t, cl_diag *d)
{
    if (t->own_match)
        return rdma__pool_post_all(t, d);
    for (int i = 0; i < CTRL_RECVS; i++) {
        int ret = rdma__ctrl_post(t, &t->ctrl[i]);
        if (ret)
            return rdma__fail(d, CL_EIO, "fi_trecv", ret, "rank %d: a control receive", t->me);
    }
    return 0;
}

/* The rank's poll hook: one look at the completion queue. */
static int rdma_poll(real_rank *r)
{
    return rdma__progress((rdma_rank *)r, false);
}

/* rank_wait's block hook: publish the wait, then sleep on the queue. */
static void rdma_block(real_rank *base, cl_request **reqs, int n, wf_op call)
{
    rank_publish_stale(base, reqs, n, call);
    rdma__progress((rdma_rank *)base, true);
}

static int rdma_rank_open(real_rank **out, const job *j, int rank, const real_opts *o, cl_diag *d)
{
    rdma_rank *t = calloc(1, sizeof *t);
    if (!t)
        return diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
    size_t n = (size_t)j->nranks;
    xfer_init(&t->x, &rdma__ops, j, rank, o->job.check, sizeof(rdma_req), sizeof(rdma_msg),
              rdma__pool_pull);
    t->x.base.poll = rdma_poll;
    t->x.base.block = rdma_block;
    t->area = j->transport;
    t->own_match = t->area->own_match;
    t->n = (int)n;
    t->me = rank;
    t->eager_limit = o->job.eager_limit;
    size_t largest = sizeof(rdma_env) + sizeof(uint64_t) + (size_t)o->job.eager_limit;
    if (largest < sizeof(rdma_env) + sizeof(rdma_ctl))
        largest = sizeof(rdma_env) + sizeof(rdma_ctl);
    t->bounce_cap = largest <= BOUNCE_KEEP_MAX ? largest : 0;
    t->use_rma = t->area->use_rma;
    if (!(t->addr = calloc(n, sizeof *t->addr)) || !(t->nmsg = calloc(n, sizeof *t->nmsg)) ||
        !(t->nrecv = calloc(n, sizeof *t->nrecv)) ||
        !(t->spill = malloc(o->job.eager_limit ? (size_t)o->job.eager_limit : 1)) ||
        (t->own_match ? rdma__pool_create(t) : !(t->ctrl = calloc(CTRL_RECVS, sizeof *t->ctrl)))) {
        diag_set(d, CL_ENOMEM, "rank %d: out of memory", rank);
        return open_fail(t, CL_ENOMEM);
    }
    int err = open_endpoint(t, d);
    if (!err)
        err = exchange_addresses(t, j, d);
    if (!err)
        err = post_standing(t, d);
    if (err)
        return open_fail(t, err);
    *out = &t->x.base;
    return 0;
}

/* Every rank says BYE to every other and waits for theirs (bounded), so no
 * endpoint closes under a message still on its way. */
static void say_bye(rdma_rank *t)
{
    rdma__fins_flush(t);
    for (int i = 0; i < t->n && !t->x.failed; i++)
        if (i != t->me && rdma__ctl_send(t, i, H_BYE, 0, 0, 0, true))
            break;
    double until = job_now() + CLOSE_SECONDS;
    while (!t->x.failed && (t->byes < t->n - 1 || t->bounces_out > 0) && job_now() < until)
        rdma__progress(t, false);
}

static void rdma_rank_close(real_rank *base)
{
    rdma_rank *t = (rdma_rank *)base;
    bool clean = !t->x.failed && t->ep &&
                 atomic_load_explicit(&t->x.base.slot->state, memory_order_acquire) == JOB_DONE;
    if (clean)
        say_bye(t);
    t->closing = true;
    if (t->ep)
        fi_close(&t->ep->fid);
    if (t->reads)
        fi_close(&t->reads->fid);
    if (t->av)
        fi_close(&t->av->fid);
    if (t->cq)
        fi_close(&t->cq->fid);
    rdma__mr_release(&t->mrs);
    if (t->domain)
        fi_close(&t->domain->fid);
    if (t->fabric)
        fi_close(&t->fabric->fid);
    if (t->info)
        fi_freeinfo(t->info);
    for (int list = 0; list < 2; list++)
        for (rdma_bounce *b = list ? t->bounce_free : t->bounces, *next; b; b = next) {
            next = b->next;
            free(b);
        }
    /* Rendezvous sends still listed are the pattern's requests. */
    xfer_release(&t->x);
    free(t->ctrl);
    rdma__pool_destroy(t);
    free(t->spill);
    free(t->addr);
    free(t->nmsg);
    free(t->nrecv);
    free(t);
}

const rdma_stats *rdma_stats_of(const cl_comm *c)
{
    if (!c || !c->world || c->world->ops != &rdma__ops)
        return NULL;
    return &((const rdma_rank *)c->world->backend)->stats;
}

const char *rdma_provider_of(const cl_comm *c)
{
    if (!c || !c->world || c->world->ops != &rdma__ops)
        return NULL;
    return ((const rdma_rank *)c->world->backend)->prov;
}

const real_transport rdma_transport = {
    .name = "rdma",
    .shared_bytes = rdma_shared_bytes,
    .shared_init = rdma_shared_init,
    .shared_release = rdma_shared_release,
    .rank_open = rdma_rank_open,
    .rank_close = rdma_rank_close,
};
