# validate.gp - validate: every tutorial pattern's model error in percent
# of its measured median, per message size (log x, linear y), a line per
# pattern; the bounds validate holds a pattern to are drawn: 10 % (the
# median over its sizes, dashed) and 25 % (every size, dotted).
width = 1200
load plotdir.'/common.gp'
stats datafile using 2 nooutput
lo = STATS_min
hi = STATS_max
eval size_tics
stats datafile using 5 nooutput
set yrange [(STATS_min < -30 ? STATS_min * 1.1 : -30) : (STATS_max > 30 ? STATS_max * 1.1 : 30)]
set format y '%g %%'
set title wrap('model error per size, every tutorial pattern: '.plottitle, titlechars)
set xlabel 'message size (bytes, log scale)'
set ylabel 'error = (modeled - measured median) / measured median (%)'
set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#555555' lw 1
set arrow 2 from graph 0, first 10 to graph 1, first 10 nohead lc rgb '#555555' dt 2 lw 1
set arrow 3 from graph 0, first -10 to graph 1, first -10 nohead lc rgb '#555555' dt 2 lw 1
set arrow 4 from graph 0, first 25 to graph 1, first 25 nohead lc rgb '#555555' dt 3 lw 1
set arrow 5 from graph 0, first -25 to graph 1, first -25 nohead lc rgb '#555555' dt 3 lw 1
set key outside right top Left reverse
# Eight colours: the next eight patterns repeat them dashed, with other
# points.  (A dash type in parentheses would be read as a dash pattern.)
dash(i) = 1 + (i - 1) / 8
plot for [i = 1 : nseries] datafile \
         using (rowkey1(1) eq word(series, i) ? $2 : NaN):5 \
         with linespoints lt i dt dash(i) pt (5 + 2 * ((i - 1) / 8)) ps 0.8 \
         title word(series, i), \
     NaN with lines lc rgb '#555555' dt 2 lw 1 title '10 % (median bound)', \
     NaN with lines lc rgb '#555555' dt 3 lw 1 title '25 % (every size)'
