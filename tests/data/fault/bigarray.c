/* Rank 1 puts a 256 KiB array on its stack (64 KiB by default on sim). */
#include <string.h>

static __attribute__((noinline)) int sum_of_big(int seed)
{
    volatile char big[256 * 1024];
    memset((char *)big, seed, sizeof big);
    return big[100] + big[sizeof big - 1];
}

int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    if (cl_rank(c) == 1 && sum_of_big(1) != 2)
        return cl_fail(c, "the array lost its bytes");
    return cl_barrier(c);
}
