# error.gp - compare: the model's error in percent of the measured median,
# per message size (log x, linear y); 0 is a perfect prediction.  Each
# measured size is a point on a stem from 0: nothing was measured between
# two sizes, so no line joins them.
load plotdir.'/common.gp'
stats datafile using 4 nooutput
lo = STATS_min
hi = STATS_max
eval size_tics
set format y '%g %%'
set title wrap('prediction error vs message size: '.plottitle, titlechars)
set xlabel 'message size (bytes, log scale)'
set ylabel 'error = (modeled - measured median) / measured median (%)'
set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#555555' dt 2 lw 1.5
if (nseries == 1) { unset key } else { set key top left Left reverse }
# Rows of the model alone (column 9 empty) have no error.
plot for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) && valid(9) ? $4 : NaN):9 \
         with impulses lt i lw 1 notitle, \
     for [i = 1 : nseries] datafile \
         using (rowkey3(1, 2, 3) eq word(series, i) && valid(9) ? $4 : NaN):9 \
         with points lt i pt 7 ps 1.2 title prefix(i).'error of the model at a measured size'
