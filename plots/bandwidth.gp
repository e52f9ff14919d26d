# bandwidth.gp - compare: bytes per second vs message size, log-log: the
# model's n / T as a curve through every row, the measurements' n / median
# as points with a bar over the interquartile range (n / q3 to n / q1) and
# n / max and n / min as small marks.
load plotdir.'/common.gp'
stats datafile using 4 nooutput
lo = STATS_min
hi = STATS_max
eval size_tics
set logscale y 10
set format y '%.0s %cB/s'
# One message's size / time is a bandwidth; a pipeline's is a throughput
# of its whole iteration, not a link's rate.
onemsg = 1
do for [i = 1 : nseries] { p = word(series, i); p = p[1 : strstrt(p, ',') - 1]; \
    if (p ne 'pingpong' && p ne 'relay') { onemsg = 0 } }
set title wrap((onemsg ? 'bandwidth' : 'size / time of one iteration').' vs message size: '. \
               plottitle, titlechars)
set xlabel 'message size (bytes, log scale)'
set ylabel (onemsg ? 'bandwidth = size / time' : 'size / time of one iteration'). \
           ' (bytes per second, log scale)'
set key top left Left reverse
# A measured row has column 6; a row of the model alone has it empty.
measured(y) = valid(6) ? y : NaN
plot for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):($4 / $5) \
         smooth unique with lines lt (2 * i - 1) title prefix(i).'model', \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):(measured($4 / $6)):(measured($4 / $11)):(measured($4 / $10)) \
         with yerrorbars lt (2 * i) title prefix(i).'measured: median, bar: interquartile range', \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):(measured($4 / $7)) \
         with points lt (2 * i) pt 1 ps 0.8 title prefix(i).'min and max', \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):(measured($4 / $8)) \
         with points lt (2 * i) pt 1 ps 0.8 notitle
