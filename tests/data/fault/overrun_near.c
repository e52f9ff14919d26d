/* Rank 1 writes 12 bytes past the end of a 1000-byte cl_alloc block, and
 * goes on as if nothing happened. */
int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    unsigned char *buf = cl_alloc(c, 1000);
    if (cl_rank(c) == 1 && buf)
        for (int i = 0; i < 1012; i++)
            buf[i] = (unsigned char)i;
    return cl_barrier(c);
}
