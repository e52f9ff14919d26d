/*
 * rdma_info.c - which libfabric providers can run commlab here, and which
 * one a run uses.
 *
 * commlab needs reliable datagram endpoints (FI_EP_RDM) with tagged
 * messages kept in send order (FI_ORDER_SAS: a pattern's messages between
 * one pair with one tag arrive in order), and likes RDMA reads
 * (FI_RMA | FI_READ | FI_REMOTE_READ) for its rendezvous.  It gives every
 * operation a context (FI_CONTEXT, FI_CONTEXT2), registers buffers by
 * virtual address or offset with provider-chosen keys, and never registers
 * local buffers: a provider that insists on FI_MR_LOCAL is listed by
 * `commlab fabric` but not offered to runs.  Where libfabric matches (its
 * tagged messages), commlab's envelope takes 8 bytes of remote CQ data;
 * where commlab matches (rdma__own_match), it needs untagged messages into
 * FI_MULTI_RECV buffers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/rdma_impl.h"

int rdma__fail(cl_diag *d, int err, const char *call, int ret, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return diag_set(d, err, "%s%s%s: %s (%d)", what, what[0] ? ": " : "", call,
                    fi_strerror(ret < 0 ? -ret : ret), ret);
}

struct fi_info *rdma__hints(const char *prov, bool rma, bool own_match)
{
    struct fi_info *h = fi_allocinfo();
    if (!h)
        return NULL;
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_TAGGED | (rma ? FI_RMA | FI_READ | FI_REMOTE_READ : 0) |
              (own_match ? FI_MSG | FI_MULTI_RECV | FI_SOURCE : 0);
    /* The envelope's second word; with own_match a short envelope. */
    h->domain_attr->cq_data_size = 8;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    if (prov && !(h->fabric_attr->prov_name = strdup(prov))) {
        fi_freeinfo(h);
        return NULL;
    }
    return h;
}

struct fi_info *rdma__pick(struct fi_info *list)
{
    for (struct fi_info *fi = list; fi; fi = fi->next)
        if (fi->domain_attr && fi->domain_attr->name && strcmp(fi->domain_attr->name, "lo") == 0)
            return fi;
    return list;
}

void rdma__prov_name(const struct fi_info *fi, char *out, size_t cap)
{
    const char *p = fi->fabric_attr && fi->fabric_attr->prov_name ? fi->fabric_attr->prov_name
                                                                  : "?";
    size_t n = strcspn(p, ";");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

/* libfabric 1.17's shm provider (Debian 12's) loses tagged messages: a
 * message that arrives before its receive is posted, after the two ranks
 * exchanged a rendezvous, is never matched, and the receive waits forever.
 * Seen here: `commlab run pingpong --backend rdma --provider shm --bytes
 * 100KiB -i 50` stalled in 10 of 10 runs with the rendezvous by RDMA read,
 * and still in 4, 5 and 2 of 10 with every receive posted as one piece,
 * with fi_tsend instead of fi_tinject, and with a polled completion queue
 * (so not an artefact of how commlab posts), and relay, allreduce-ring and a truncated rendezvous stalled on
 * 4 ranks with the rendezvous by tagged messages; never with every receive
 * posted first, never with eager messages only, never on the tcp provider.
 * So on that provider commlab keeps receive buffers posted for every
 * message and matches them itself (rdma.c): nothing arrives unexpected at
 * the libfabric level. */
bool rdma__own_match(const char *prov)
{
    return prov && strcmp(prov, "shm") == 0 && fi_version() <= FI_VERSION(1, 17);
}

/* fi_getinfo for hints; *out NULL (and 0 returned) when nothing matches. */
static int getinfo(struct fi_info *hints, struct fi_info **out, cl_diag *d)
{
    *out = NULL;
    int ret = fi_getinfo(RDMA_FI_VERSION, NULL, NULL, 0, hints, out);
    if (ret == -FI_ENODATA) {
        *out = NULL;
        return 0;
    }
    if (ret)
        return rdma__fail(d, CL_EIO, "fi_getinfo", ret, "libfabric");
    return 0;
}

/* What every provider offers of what commlab needs at least (tagged
 * messages, no RMA); *out NULL when nothing does. */
static int every_provider(struct fi_info **out, cl_diag *d)
{
    *out = NULL;
    struct fi_info *hints = rdma__hints(NULL, false, false);
    if (!hints)
        return diag_set(d, CL_ENOMEM, "out of memory");
    int err = getinfo(hints, out, d);
    fi_freeinfo(hints);
    return err;
}

static bool listed(const rdma_provider_desc *v, size_t n, const rdma_provider_desc *x)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, x->name) == 0 && strcmp(v[i].fabric, x->fabric) == 0 &&
            strcmp(v[i].domain, x->domain) == 0)
            return true;
    return false;
}

int rdma_providers_list(rdma_provider_desc **out, size_t *n, cl_diag *d)
{
    *out = NULL;
    *n = 0;
    if (rdma__lib_load(d))
        return CL_ENOSYS;
    /* Everything with RDM endpoints, whatever it needs: the list shows
     * what there is, and says what commlab cannot use. */
    struct fi_info *hints = fi_allocinfo(), *list = NULL;
    if (!hints)
        return diag_set(d, CL_ENOMEM, "out of memory");
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = ~0ULL;
    hints->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
    int err = getinfo(hints, &list, d);
    fi_freeinfo(hints);
    if (err)
        return err;
    size_t cap = 0;
    for (struct fi_info *fi = list; fi; fi = fi->next)
        cap++;
    rdma_provider_desc *v = calloc(cap ? cap : 1, sizeof *v);
    if (!v) {
        fi_freeinfo(list);
        return diag_set(d, CL_ENOMEM, "out of memory");
    }
    for (struct fi_info *fi = list; fi; fi = fi->next) {
        rdma_provider_desc x = {0};
        rdma__prov_name(fi, x.name, sizeof x.name);
        snprintf(x.fabric, sizeof x.fabric, "%s", fi->fabric_attr->name ? fi->fabric_attr->name : "");
        snprintf(x.domain, sizeof x.domain, "%s", fi->domain_attr->name ? fi->domain_attr->name : "");
        x.tagged = (fi->caps & FI_TAGGED) != 0;
        x.rma = (fi->caps & (FI_RMA | FI_READ)) == (FI_RMA | FI_READ) ||
                ((fi->caps & FI_RMA) && !(fi->caps & (FI_READ | FI_WRITE)));
        x.local_mr = (fi->domain_attr->mr_mode & FI_MR_LOCAL) || (fi->mode & FI_LOCAL_MR);
        x.inject_bytes = fi->tx_attr->inject_size;
        x.max_msg = fi->ep_attr->max_msg_size;
        x.manual_progress = fi->domain_attr->data_progress == FI_PROGRESS_MANUAL;
        x.own_match = rdma__own_match(x.name);
        if (listed(v, *n, &x))
            continue;
        v[(*n)++] = x;
    }
    fi_freeinfo(list);
    *out = v;
    return 0;
}

/* Whether prov can run commlab (tagged at least), and with RDMA reads. */
static int usable(const char *prov, bool *rma, cl_diag *d)
{
    *rma = false;
    for (int with_rma = 1; with_rma >= 0; with_rma--) {
        struct fi_info *hints = rdma__hints(prov, with_rma, rdma__own_match(prov));
        struct fi_info *list = NULL;
        if (!hints)
            return diag_set(d, CL_ENOMEM, "out of memory");
        int err = getinfo(hints, &list, d);
        fi_freeinfo(hints);
        if (err)
            return err;
        if (list) {
            *rma = with_rma;
            fi_freeinfo(list);
            return 0;
        }
    }
    return CL_ENOENT;
}

/* "shm, tcp": the providers commlab can run on, each once, in libfabric's
 * order. */
static int usable_names(char *out, size_t cap, cl_diag *d)
{
    out[0] = 0;
    struct fi_info *list;
    int err = every_provider(&list, d);
    if (err)
        return err;
    for (struct fi_info *fi = list; fi; fi = fi->next) {
        char name[RDMA_PROV_MAX], item[RDMA_PROV_MAX + 4], all[600];
        rdma__prov_name(fi, name, sizeof name);
        snprintf(item, sizeof item, " %s,", name);
        snprintf(all, sizeof all, " %s,", out); /* " shm, tcp," */
        if (strstr(all, item))
            continue;
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s", len ? ", " : "", name);
    }
    fi_freeinfo(list);
    return 0;
}

int rdma_provider_auto(char *name, size_t cap, bool multi_host, cl_diag *d)
{
    if (rdma__lib_load(d))
        return CL_ENOSYS;
    struct fi_info *list;
    int err = every_provider(&list, d);
    if (err)
        return err;
    /* Within a host shm; across hosts the first NIC provider libfabric
     * prefers (verbs, efa, cxi, psm2...), tcp when there is none.  The
     * software providers are never a NIC. */
    static const char *const software[] = {"shm", "tcp", "udp", "sockets", "net"};
    const char *pick = NULL;
    char first_nic[RDMA_PROV_MAX] = "";
    bool have_shm = false, have_tcp = false;
    for (struct fi_info *fi = list; fi; fi = fi->next) {
        char n[RDMA_PROV_MAX];
        rdma__prov_name(fi, n, sizeof n);
        bool soft = false;
        for (size_t i = 0; i < sizeof software / sizeof software[0]; i++)
            soft |= strcmp(n, software[i]) == 0;
        have_shm |= strcmp(n, "shm") == 0;
        have_tcp |= strcmp(n, "tcp") == 0;
        if (!soft && !first_nic[0])
            snprintf(first_nic, sizeof first_nic, "%s", n);
    }
    fi_freeinfo(list);
    if (!multi_host && have_shm)
        pick = "shm";
    else if (first_nic[0])
        pick = first_nic;
    else if (have_tcp)
        pick = "tcp";
    if (!pick)
        return diag_set(d, CL_EINVAL, "no libfabric provider here offers tagged reliable "
                        "datagram endpoints (`fi_info -l` lists what there is)");
    snprintf(name, cap, "%s", pick);
    return 0;
}

int rdma_provider_check(const char *name, cl_diag *d)
{
    if (rdma__lib_load(d))
        return CL_ENOSYS;
    if (!name || strcmp(name, "auto") == 0) {
        char pick[RDMA_PROV_MAX];
        return rdma_provider_auto(pick, sizeof pick, false, d);
    }
    bool rma;
    int err = usable(name, &rma, d);
    if (err && err != CL_ENOENT)
        return err;
    if (!err)
        return 0;
    char names[512];
    if ((err = usable_names(names, sizeof names, d)))
        return err;
    return diag_set(d, CL_EINVAL, "provider '%s' is not available here; available: %s",
                    name, names[0] ? names : "none");
}
