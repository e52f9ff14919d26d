# sweep.gp - sweep: T(n) = alpha + n / B per tier over message sizes,
# log-log (the curve from the tier's alpha and B, the CSV's sizes as dots), with each tier's crossover n* = alpha x B marked where it lies
# in the range: there the latency term equals the bandwidth term, so
# T(n*) = 2 alpha; below it a message is latency-bound, above bandwidth-bound.
load plotdir.'/common.gp'
stats datafile using 1 nooutput
lo = STATS_min
hi = STATS_max
# Each tier's crossover and alpha: the same on all its rows, so their sum
# over its rows divided by the count (before the log axes are set).
array cx[nseries]
array ca[nseries]
array cb[nseries]
do for [i = 1 : nseries] {
    stats datafile using (rowkey1(2) eq word(series, i) ? 1 : 0): \
                         (rowkey1(2) eq word(series, i) ? $5 : 0) nooutput
    cx[i] = STATS_sum_x > 0 ? STATS_sum_y / STATS_sum_x : 0
    n = STATS_sum_x
    stats datafile using (rowkey1(2) eq word(series, i) ? $6 : 0) nooutput
    ca[i] = n > 0 ? STATS_sum / n : 0
    stats datafile using (rowkey1(2) eq word(series, i) ? $7 : 0) nooutput
    cb[i] = n > 0 ? STATS_sum / n : 1
}
eval size_tics
set logscale y 10
set format y '%.0s %cs'
set title wrap(plottitle, titlechars)
set xlabel 'message size n (bytes, log scale)'
set ylabel 'T(n) = alpha + n / B (seconds, log scale)'
set key top left Left reverse
do for [i = 1 : nseries] {
    if (cx[i] >= lo && cx[i] <= hi) {
        set label i sprintf(' n* = %s', size_label(cx[i])) at cx[i], 2 * ca[i] \
            point lt i pt 9 ps 2 left offset 0.6, -0.6 tc lt i
    }
}
# The model as a curve from each tier's alpha and B, the swept sizes of
# the CSV as points on it.
set samples 400
plot for [i = 1 : nseries] '+' using 1:(ca[i] + $1 / cb[i]) with lines lt i title word(series, i), \
     for [i = 1 : nseries] datafile using (rowkey1(2) eq word(series, i) ? $1 : NaN):3 \
         with points lt i pt 7 ps 0.6 notitle, \
     NaN with points lt -1 pt 9 ps 2 title 'crossover n* = alpha x B (T = 2 alpha)'
