# bandwidth.gp - compare: bytes per second vs message size, log-log: the
# model's n / T as a line, the measurements' n / median as points with a
# bar from n / max to n / min.
load plotdir.'/common.gp'
stats datafile using 4 nooutput
lo = STATS_min
hi = STATS_max
eval size_tics
set logscale y 10
set format y '%.0s %cB/s'
set title wrap('bandwidth vs message size: '.plottitle, titlechars)
set xlabel 'message size (bytes, log scale)'
set ylabel 'bandwidth = size / time (bytes per second, log scale)'
set key top left Left reverse
plot for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):($4 / $5) \
         smooth unique with lines lt (2 * i - 1) title prefix(i).'model', \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):($4 / $6):($4 / $8):($4 / $7) \
         with yerrorbars lt (2 * i) title prefix(i).'measured (median, bar: min to max)'
