# collectives.gp - collectives: every algorithm of one collective over
# sizes, log-log: the simulated time as points joined by a line, its
# alpha-beta formula (each message alone) as a dashed line in the same
# colour, and the fastest algorithm at each size ringed.  Where a line
# leaves its dashes, messages shared a link.
load plotdir.'/common.gp'
stats datafile using 1 nooutput
lo = STATS_min
hi = STATS_max
eval size_tics
set logscale y 10
set format y '%.0s %cs'
set title plottitle
set xlabel 'size n (bytes, log scale)'
set ylabel 'time (seconds, log scale)'
set key top left Left reverse
plot for [i = 1 : nseries] datafile using (rowkey1(2) eq word(series, i) ? $1 : NaN):3 \
         with linespoints lt i pt 7 ps 0.7 title word(series, i), \
     for [i = 1 : nseries] datafile using (rowkey1(2) eq word(series, i) ? $1 : NaN):4 \
         with lines lt i dt 2 lw 1 notitle, \
     datafile using (strcol(5) eq 'yes' ? $1 : NaN):3 with points lt -1 pt 6 ps 2.2 \
         title 'fastest at this size', \
     NaN with lines lt -1 dt 2 lw 1 title 'alpha-beta formula (dashed)'
