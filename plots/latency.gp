# latency.gp - compare: time vs message size, log-log.  The model is a
# line; each measurement is a point at its median with a bar from min to
# max.  One colour pair per series (pattern, backend, ranks).
load plotdir.'/common.gp'
stats datafile using 4 nooutput
lo = STATS_min
hi = STATS_max
eval size_tics
set logscale y 10
set format y '%.0s %cs'
set title wrap('latency vs message size: '.plottitle, titlechars)
set xlabel 'message size (bytes, log scale)'
set ylabel 'time (seconds, log scale)'
set key top left Left reverse
plot for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):5 \
         smooth unique with lines lt (2 * i - 1) title prefix(i).'model', \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) ? $4 : NaN):6:7:8 \
         with yerrorbars lt (2 * i) title prefix(i).'measured (median, bar: min to max)'
