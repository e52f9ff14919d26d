# tiers.gp - tiers: the time of one message on each tier as a bar, split
# into the latency term alpha (bottom) and the bandwidth term n / B (top),
# each bar labelled with its time, its ratio to the fastest tier and
# alpha's share of it: for a large message alpha is far too thin a slice
# to see (1 us of 0.9 ms at 256 MiB on nvlink), so the figure says it in
# words; a log axis would show it but stack the two terms falsely.  Where
# alpha is thinner than a hundredth of the axis on every bar, its slice and
# its colour in the legend would promise what no one can see: the legend
# says so in words instead.
load plotdir.'/common.gp'
stats datafile using 6 nooutput
tmax = STATS_max > 0 ? STATS_max : 1e-9
ntiers = STATS_records
set xrange [-0.6 : ntiers - 0.4]
set yrange [0 : tmax * 1.25]
stats datafile using 4 nooutput
seen = STATS_max > 0.01 * tmax * 1.25 ? 1 : 0
set bmargin 4
set format y '%.0s %cs'
unset mytics
if (term ne 'dumb') { set grid noxtics nomxtics }
set boxwidth 0.6
set title wrap(plottitle, titlechars)
unset xlabel
set ylabel 'time of one message, T = alpha + n / B (seconds)'
set key top left Left reverse
# "alpha 1 us = 0.11 %": the latency term and its share of T.
alphaword(a, t) = 'alpha '.time_label(a).' = '.(t > 0 ? sprintf('%.2g %%', 100 * a / t) : '-')
# Two label lines above each bar: a terminal's rows are coarser.
loff = term eq 'dumb' ? 2.6 : 1.9
tierlabel(c) = strcol(2) eq '' ? strcol(1) : strcol(1)."\n(".strcol(2).')'
plot datafile using 0:6:xtic(tierlabel(0)) with boxes lt 1 title 'bandwidth term n / B', \
     for [q = 1 : seen] datafile using 0:4 with boxes lt 2 \
         title 'latency term alpha (its share on each bar)', \
     for [q = 1 : 1 - seen] NaN with lines lt -3 \
         title 'latency term alpha: too thin to see', \
     datafile using 0:6:(time_label($6).sprintf('  (%.1fx)', $7)."\n".alphaword($4, $6)) \
         with labels offset 0, loff notitle
