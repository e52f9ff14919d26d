# latency.gp - compare: time vs message size, log-log.  The model is a
# curve through every row (the measured sizes and the rows of the model
# alone between them); each measurement is a point at its median with a
# bar over the interquartile range (25th to 75th percentile), its min and
# max as small marks.  One colour pair per series (pattern, backend, ranks).
# The axis spans the model and the interquartile ranges (and the mins): a
# loaded machine's slowest iteration can be a thousand times the median,
# and an axis stretched to it squeezes the bars flat.  A max above the axis
# is a triangle at its top edge.  A dotted line marks the eager limit,
# where the model (and the transport) change protocol.
load plotdir.'/common.gp'
stats datafile using 4 nooutput
lo = STATS_min
hi = STATS_max
eval size_tics
set logscale y 10
set format y '%.0s %cs'
# One message's time is a latency; a pipeline's or a ring's is a step.
onemsg = 1
do for [i = 1 : nseries] { p = word(series, i); p = p[1 : strstrt(p, ',') - 1]; \
    if (p ne 'pingpong' && p ne 'relay') { onemsg = 0 } }
set title wrap((onemsg ? 'latency' : 'time of one iteration').' vs message size: '.plottitle, \
               titlechars)
set xlabel 'message size (bytes, log scale)'
set ylabel (onemsg ? 'one-way time' : 'time of one iteration').' (seconds, log scale)'
set key top left Left reverse
# A measured row has column 6; a row of the model alone has it empty.
measured(y) = valid(6) ? y : NaN
stats datafile using 5 nooutput
ylo = STATS_min
yhi = STATS_max
stats datafile using (measured($7)) nooutput
ylo = STATS_records > 0 && STATS_min < ylo ? STATS_min : ylo
stats datafile using (measured($11)) nooutput
yhi = STATS_records > 0 && STATS_max > yhi ? STATS_max : yhi
ytop = yhi * 4
stats datafile using (measured($8) > ytop ? 1 : 0) nooutput
nabove = STATS_sum
set yrange [ylo / 2 : ytop]
# Where the protocol changes (the eager limit, from the CSV's
# "# eager_limit_bytes:"): above it a message waits for its receive.
if (!exists("eager")) eager = 0
if (eager > lo && eager <= hi) {
    set arrow 9 from eager, graph 0 to eager, graph 1 nohead lc rgb '#888888' dt 3 lw 1.5
    set label 9 'eager limit (rendezvous above)' at eager, graph 0.04 offset -0.5, 0 right \
        tc rgb '#666666'
}
plot for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):5 \
         smooth unique with lines lt (2 * i - 1) title prefix(i).'model', \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):(measured($6)):(measured($10)):(measured($11)) \
         with yerrorbars lt (2 * i) title prefix(i).'measured: median, bar: interquartile range', \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):(measured($7)) \
         with points lt (2 * i) pt 1 ps 0.8 title prefix(i).'min and max', \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):(measured($8) <= ytop ? $8 : NaN) \
         with points lt (2 * i) pt 1 ps 0.8 notitle, \
     for [q = 1 : nabove > 0] for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):(measured($8) > ytop ? ytop / 1.25 : NaN) \
         with points lt (2 * i) pt 9 ps 0.9 title (i == 1 ? 'max above the axis (the CSV has it)' : '')
