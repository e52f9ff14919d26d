/* Ranks 0 and 1 ping-pong for ever; ranks 2 and 3 each receive from the
 * other first: those two are deadlocked while the first two go on. */
int pattern(cl_comm *c, const cl_args *a)
{
    int x = 0, me = cl_rank(c);
    (void)a;
    if (me >= 2)
        return cl_recv(c, &x, sizeof x, 5 - me, 0, NULL);
    for (;;) {
        int err = me == 0 ? cl_send(c, &x, sizeof x, 1, 0) : cl_recv(c, &x, sizeof x, 0, 0, NULL);
        if (!err)
            err = me == 0 ? cl_recv(c, &x, sizeof x, 1, 0, NULL) : cl_send(c, &x, sizeof x, 0, 0);
        if (err)
            return err;
    }
}
