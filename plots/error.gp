# error.gp - compare: the model's error in percent of the measured median,
# per message size (log x, linear y); 0 is a perfect prediction.
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
         smooth unique with linespoints lt i title prefix(i).'error of the model'
