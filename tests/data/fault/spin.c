/* Rank 1 loops without calling commlab; rank 0 waits for its message. */
int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    int x = 0;
    if (cl_rank(c) == 1)
        for (volatile unsigned i = 0;; i++)
            ;
    return cl_recv(c, &x, sizeof x, 1, 0, NULL);
}
