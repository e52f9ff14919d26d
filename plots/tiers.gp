# tiers.gp - tiers: the time of one message on each tier as a bar, split
# into the latency term alpha (bottom) and the bandwidth term n / B (top),
# each bar labelled with its time and its ratio to the fastest tier.
load plotdir.'/common.gp'
stats datafile using 6 nooutput
tmax = STATS_max > 0 ? STATS_max : 1e-9
ntiers = STATS_records
set xrange [-0.6 : ntiers - 0.4]
set yrange [0 : tmax * 1.15]
set bmargin 4
set format y '%.0s %cs'
unset mytics
if (term ne 'dumb') { set grid noxtics nomxtics }
set boxwidth 0.6
set title wrap(plottitle, titlechars)
unset xlabel
set ylabel 'time of one message, T = alpha + n / B (seconds)'
set key top left Left reverse
tierlabel(c) = strcol(2) eq '' ? strcol(1) : strcol(1)."\n(".strcol(2).')'
plot datafile using 0:6:xtic(tierlabel(0)) with boxes lt 1 title 'bandwidth term n / B', \
     datafile using 0:4 with boxes lt 2 title 'latency term alpha', \
     datafile using 0:6:(time_label($6).sprintf('  (%.1fx)', $7)) \
         with labels offset 0, 0.8 notitle
