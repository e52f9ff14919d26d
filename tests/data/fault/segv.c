/* Rank 1 writes through a null pointer, after rank 0 printed a line. */
int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    volatile int *volatile nowhere = 0;
    if (cl_rank(c) == 0)
        cl_printf(c, "before the crash");
    if (cl_rank(c) == 1)
        *nowhere = 1;
    return cl_barrier(c);
}
