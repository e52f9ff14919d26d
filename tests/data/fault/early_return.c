/* Rank 1 returns at once; rank 0 receives from it, for ever.  Every
 * backend says rank 0 waits on a rank that already returned. */
int pattern(cl_comm *c, const cl_args *a)
{
    int x = 0;
    (void)a;
    if (cl_rank(c) == 1)
        return 0;
    return cl_recv(c, &x, sizeof x, 1, 0, NULL);
}
