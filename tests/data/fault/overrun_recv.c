/* Rank 0 receives 8 KiB more than its cl_alloc block holds: commlab's copy
 * of the message runs past the block's end. */
int pattern(cl_comm *c, const cl_args *a)
{
    size_t n = a->bytes + 8192;
    unsigned char *buf = cl_alloc(c, cl_rank(c) == 0 ? a->bytes : n);
    if (!buf)
        return 0;
    if (cl_rank(c) == 1)
        return cl_send(c, buf, n, 0, 0);
    return cl_recv(c, buf, n, 1, 0, NULL);
}
