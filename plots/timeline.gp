# timeline.gp - timeline: what every rank did during one iteration, one row
# of bars per rank (rank 0 on top), time from the iteration's first call.
#
#   a filled bar        a blocking call or compute, from the moment its data
#                       started moving (or it began) to its end
#   a pale bar          a send or receive posted but waiting for its peer
#                       (rendezvous: the data moves once both sides are there)
#   a thin bar below    a non-blocking isend/irecv, from post to completion
#   an outline          the whole iteration on that rank (measured runs only)
#   the red zone        a deadlock: nothing completed after its left edge
#   a hatched red bar   a call that never completed (stalled: the blocked
#                       sends and receives of a deadlock), from its call to
#                       the figure's edge, labelled with the call
#
# Gaps between a rank's bars are time it spent idle: a pipeline's bubble,
# which the title gives as a share of the step where the ranks compute (1
# less the compute time over ranks x step, the step from the earliest
# iteration start to the latest end).  A call too short to see at the
# axis's scale is drawn a little wider, so every op in the legend shows.
# With datafile2 set, the second file is drawn below the first (modeled
# above measured), each on its own time axis.
if (!exists("datafile2")) datafile2 = ''
if (!exists("origin")) origin = 0
if (!exists("origin2")) origin2 = 0
stacked = datafile2 ne ''
height = stacked ? 1000 : 560
load plotdir.'/common.gp'

# A colour per op.
opcolor(op) = op eq 'compute' ? '#2ca02c' : op eq 'send' ? '#1f77b4' : \
              op eq 'recv' ? '#ff7f0e' : op eq 'wait' ? '#9467bd' : \
              op eq 'isend' ? '#6baed6' : op eq 'irecv' ? '#fdae6b' : '#7f7f7f'
isop(op) = strcol(2) eq op
main(op) = op ne 'isend' && op ne 'irecv' && op ne 'iter'
h = 0.28     # half the height of a main bar
sideword(s) = s eq 'sim' ? 'modeled: ' : s ne '' ? 'measured: ' : ''
# "send to 1", "recv from 0", "barrier": what a stalled call was.
stalledlabel(x) = strcol(2).(isop('send') && $6 >= 0 ? ' to '.strcol(6) : \
                             isop('recv') && $6 >= 0 ? ' from '.strcol(6) : \
                             isop('recv') ? ' from any' : '')

# Each panel on its own time axis: a modeled run is often a hundred times
# shorter than the measured one, and on a shared axis it would be a
# sliver.  The titles say each panel's step, so the two still compare.
if (stacked) { set multiplot layout 2, 1 }
do for [p = 1 : (stacked ? 2 : 1)] {
    f = p == 1 ? datafile : datafile2
    ttl = p == 1 ? plottitle : plottitle2
    sd = p == 1 ? side : side2
    st = p == 1 ? status : status2
    org = p == 1 ? origin : origin2
    ops = p == 1 ? series : series2
    set autoscale xy
    stats f using 1 nooutput
    nranks = STATS_max + 1
    # Outlines help few bars and blacken many.
    many = STATS_records >= 400
    stats f using 5 nooutput
    tend = STATS_max > 0 ? STATS_max : 1e-9
    stats f using ((isop('send') || isop('recv')) && $4 > $3 ? 1 : 0) nooutput
    nwaiting = STATS_sum
    stats f using (isop('iter') ? 1 : 0) nooutput
    niter = STATS_sum
    stats f using ($9 == 1 ? 1 : 0) nooutput
    nstalled = STATS_sum
    deadlock = st eq 'deadlock'
    # The step: the iterations' outlines where there are some, else every
    # row.  The axis spans the step (the barriers around it are cut off at
    # its edges), or up to the deadlock and half as much again after it.
    if (niter > 0) {
        stats f using (isop('iter') ? $3 : NaN) nooutput
        t0 = STATS_min
        stats f using (isop('iter') ? $5 : NaN) nooutput
        t1 = STATS_max
    } else {
        stats f using 3 nooutput
        t0 = STATS_min
        t1 = tend
    }
    step = t1 - t0
    span = deadlock || step <= 0 ? tend - t0 : step
    # A deadlock at the very start: a microsecond to see its calls in.
    span = span > (deadlock ? 1e-6 : 0) ? span : (deadlock ? 1e-6 : 1e-9)
    sc = span >= 1 ? 1 : span >= 1e-3 ? 1e3 : span >= 1e-6 ? 1e6 : 1e9
    unit = span >= 1 ? 's' : span >= 1e-3 ? 'ms' : span >= 1e-6 ? 'us' : 'ns'
    x(t) = (t - t0) * sc
    stats f using (isop('compute') ? $5 - $4 : 0) nooutput
    busy = STATS_sum
    bubble = busy > 0 && step > 0 ? sprintf(', step %s, bubble %.1f %%', \
                                            time_label(step), 100 * (1 - busy / (nranks * step))) : ''
    bars = ''
    do for [k = 1 : words(ops)] { if (word(ops, k) ne 'iter') { bars = bars.' '.word(ops, k) } }

    unset object
    unset arrow
    unset label
    xmax = span * sc * (deadlock ? 1.5 : 1.02)
    minw = xmax * 0.004 # the narrowest bar drawn
    set xrange [0 : xmax]
    set yrange [nranks - 0.45 : -0.55]
    set ytics 0, (nranks > 24 ? ceil(nranks / 16.0) : 1), nranks - 1 out nomirror
    set format y 'rank %.0f'
    set mytics 1
    if (term ne 'dumb') { set grid xtics noytics nomytics }
    set format x '%g'
    set xlabel 'time since the iteration began ('.unit.')'
    set ylabel ''
    set title wrap(sideword(sd).ttl.bubble.(deadlock ? '  [deadlock]' : ''), titlechars)
    set key outside right top vertical Left reverse
    if (deadlock) {
        set object 1 rect from x(tend), graph 0 to graph 1, graph 1 \
            fc rgb '#fbe3e0' fs solid 1.0 noborder behind
        set arrow 1 from x(tend), graph 0 to x(tend), graph 1 nohead lc rgb '#d62728' lw 2
        # The moment on the run's clock, as the run's report names it.
        set label 1 sprintf("deadlock:\nnothing completes\nafter t = %s\n(the run's clock)", \
                            time_label(org + tend)) \
            at x(tend), graph 0.5 offset 1, 0 left front tc rgb '#d62728'
    }
    # "for [q = 1 : n > 0]" draws an element only when it has rows: gnuplot
    # warns about elements without any.
    plot for [q = 1 : niter > 0] f \
             using (isop('iter') ? x($3) : NaN):1:(x($3)):(x($5)):($1 - 0.45):($1 + 0.45) \
             with boxxyerror fs empty border rgb '#888888' lc rgb '#888888' \
             title 'iteration', \
         for [q = 1 : nwaiting > 0] f \
             using ((isop('send') || isop('recv')) && $4 > $3 && $9 == 0 ? x($3) : NaN):1:(x($3)):(x($4)): \
                   ($1 - h):($1 + h) \
             with boxxyerror fs solid 1.0 border lc rgb '#bbbbbb' fc rgb '#e6e6e6' \
             title 'waiting for the peer', \
         for [k = 1 : words(bars)] f \
             using (isop(word(bars, k)) && $9 == 0 ? x($4) : NaN):1:(x(main(word(bars, k)) ? $4 : $3)): \
                   (x($5) - x(main(word(bars, k)) ? $4 : $3) < minw ? x(main(word(bars, k)) ? $4 : $3) + minw : x($5)): \
                   ($1 + (main(word(bars, k)) ? -h : h + 0.03)):($1 + (main(word(bars, k)) ? h : 0.44)) \
             with boxxyerror fc rgb (opcolor(word(bars, k))) \
             fs solid 0.9 border lc rgb (many ? opcolor(word(bars, k)) : '#333333') \
             title word(bars, k), \
         for [q = 1 : nstalled > 0] f \
             using ($9 == 1 ? x($3) : NaN):1:(x($3)):(xmax):($1 - h):($1 + h) \
             with boxxyerror fs pattern 2 border lc rgb '#d62728' lc rgb '#d62728' \
             title 'never completed', \
         for [q = 1 : nstalled > 0] f \
             using ($9 == 1 ? x($3) : NaN):1:(stalledlabel(0)) \
             with labels left offset 0.5, (h + 0.1) * 2.2 tc rgb '#d62728' notitle
}
if (stacked) { unset multiplot }
