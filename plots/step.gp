# step.gp - step: training steps side by side, a bar a layout (tp x dp x
# pp, in the CSV's order: `step --sweep` ranks them by step time).  Each
# bar is the rank that ended last, its step in parts stacked from the
# bottom: its compute, then what it waited on tensor-parallel all-reduces,
# on the pipeline (its messages and the bubble) and on the data-parallel
# gradients; the parts add up to its step, which is written above the bar.
load plotdir.'/common.gp'
set title wrap(plottitle, titlechars)
set ylabel 'seconds of the step (the rank that ended last)'
set xlabel 'layout (tp.dp.pp), fastest first'
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set style data histograms
set style histogram rowstacked
set boxwidth 0.7 relative
set xtics rotate by -30 nomirror
set format y '%.0s %cs'
set key outside right top Left reverse
plot datafile using 3:xtic(1) lc rgb '#9ecae1' title 'compute', \
     '' using 4 lc rgb '#d62728' title 'tp: all-reduces', \
     '' using 5 lc rgb '#ff7f0e' title 'pp: messages and bubble', \
     '' using 6 lc rgb '#2ca02c' title 'dp: gradients not hidden', \
     '' using 0:2:(time_label($2)) with labels offset 0, 0.8 notitle
