# common.gp - loaded first by every template: terminal, output, CSV reading,
# colours.  commlab runs each template as
#     gnuplot -e "plotdir='...'; term='png'; output='...'; datafile='...'; ..." T.gp
# (see plots/README.md for every variable).  A template may set `width` and
# `height` (pixels) before loading this file.  `cols` is the terminal's
# width in characters, for term 'dumb'.
if (!exists("cols")) cols = 110
if (!exists("width")) width = 1000
if (!exists("height")) height = 620
set encoding utf8
if (term eq 'png') {
    if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
        set terminal pngcairo size width, height font 'sans,11' noenhanced
    } else {
        set terminal png size width, height noenhanced
    }
} else {
    if (term eq 'svg') {
        set terminal svg size width, height dynamic font 'sans,11' noenhanced
    } else {
        set terminal dumb size cols, (height > 700 ? 50 : 32) noenhanced
    }
}
if (output ne '') set output output

set datafile separator comma
set datafile commentschars '#'
set datafile columnheaders
if (term ne 'dumb') { set grid xtics ytics mxtics mytics lc rgb '#dddddd' lw 1, lc rgb '#eeeeee' lw 1 }
set border lc rgb '#555555'
set key opaque box lc rgb '#bbbbbb'
set style fill solid 0.85 border -1

# Colours: one per series (model and measurement of a series take two).
set linetype 1 lc rgb '#1f77b4' lw 2 pt 7 ps 1
set linetype 2 lc rgb '#ff7f0e' lw 2 pt 7 ps 1
set linetype 3 lc rgb '#2ca02c' lw 2 pt 7 ps 1
set linetype 4 lc rgb '#d62728' lw 2 pt 7 ps 1
set linetype 5 lc rgb '#9467bd' lw 2 pt 7 ps 1
set linetype 6 lc rgb '#8c564b' lw 2 pt 7 ps 1
set linetype 7 lc rgb '#e377c2' lw 2 pt 7 ps 1
set linetype 8 lc rgb '#7f7f7f' lw 2 pt 7 ps 1
set linetype cycle 8

# Sizes on a log axis: tics at powers of two, labelled 8 B, 4 KiB, 1 MiB.
size_label(x) = x >= 2.0**30 ? sprintf('%.4g GiB', x / 2.0**30) : \
                x >= 2.0**20 ? sprintf('%.4g MiB', x / 2.0**20) : \
                x >= 2.0**10 ? sprintf('%.4g KiB', x / 2.0**10) : sprintf('%.4g B', x)
# A time with four significant digits in the unit that reads best.
time_label(t) = t >= 1 ? sprintf('%.4g s', t) : t >= 1e-3 ? sprintf('%.4g ms', t * 1e3) : \
                t >= 1e-6 ? sprintf('%.4g us', t * 1e6) : sprintf('%.4g ns', t * 1e9)
# eval size_tics, with lo and hi set to the smallest and largest size:
# at most about 12 tics, and a margin on both sides.
size_tics = "set logscale x 2; unset mxtics; set xtics (); \
  e0 = floor(log(lo) / log(2) + 1e-9); e1 = ceil(log(hi) / log(2) - 1e-9); \
  st = e1 - e0 <= 12 ? 1 : e1 - e0 <= 24 ? 2 : e1 - e0 <= 48 ? 4 : 8; \
  do for [e = e0 : e1] { if (e % st == 0) { set xtics add (size_label(2.0**e) 2.0**e) } }; \
  set xrange [lo / 1.5 : hi * 1.5]"
# The series key of the row: columns joined with ','.
rowkey1(a) = strcol(a)
rowkey3(a, b, c) = strcol(a).','.strcol(b).','.strcol(c)
# Legend prefix naming series i when there are several.
prefix(i) = nseries > 1 ? word(series, i).': ' : ''

# Titles are wrapped, not clipped (a dumb terminal drops a title wider
# than twice the distance from the graph's centre to the nearer edge): at
# the last ', ' that fits a line, or mid-word when there is none.  A line
# holds titlechars characters: the terminal's width less a key outside
# the graph, or the figure's width at about 10 pixels a character.
titlechars = term eq 'dumb' ? cols - 24 : int(width / 10)
wrap_sep(s, i) = i < 2 ? 0 : s[i:i+1] eq ', ' ? i : wrap_sep(s, i - 1)
wrap_cut(s, n) = (wrap_k = wrap_sep(s, n), wrap_k > 0 ? wrap_k : n)
wrap_rest(s, k) = s[k + 1:k + 1] eq ' ' ? s[k + 2:] : s[k + 1:]
wrap(s, n) = strlen(s) <= n ? s : \
             s[1:wrap_cut(s, n)]."\n".wrap(wrap_rest(s, wrap_cut(s, n)), n)
