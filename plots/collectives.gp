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
# The CSV holds a row per size and algorithm, size by size: a line drawn
# through one algorithm's rows in place would break at every other
# algorithm's row.  Copied algorithm by algorithm into $bycoll (columns:
# size, simulated, formula, series index), each algorithm's rows are
# together and its line joins them.
set table $bycoll
do for [i = 1 : nseries] {
    plot datafile using 1:3:4:(i) with table if (strcol(2) eq word(series, i))
}
set table $fastest
plot datafile using 1:3 with table if (strcol(5) eq 'yes')
unset table
set datafile separator whitespace
unset datafile columnheaders
# A shape per algorithm, so algorithms whose times coincide (the ring and
# the hierarchical one on a full mesh) both show.
shape(i) = int(word('7 5 9 11 13 15 6 4', (i - 1) % 8 + 1))
plot for [i = 1 : nseries] $bycoll using ($4 == i ? $1 : NaN):2 \
         with linespoints lt i pt shape(i) ps (1.3 - 0.08 * i) title word(series, i), \
     for [i = 1 : nseries] $bycoll using ($4 == i ? $1 : NaN):3 \
         with lines lt i dt 2 lw 1 notitle, \
     $fastest using 1:2 with points lt -1 pt 6 ps 2.2 \
         title 'fastest at this size', \
     NaN with lines lt -1 dt 2 lw 1 title 'alpha-beta formula (dashed)'
