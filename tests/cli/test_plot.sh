#!/bin/sh
# test_plot.sh COMMLAB TOOLDIR - plots: every template renders a PNG and an
# SVG from a small CSV, --term dumb draws in the terminal, bad CSVs are
# refused with the line and value, run --timeline writes one row per record.
# Ends with "N passed, N failed".  Rendering checks are skipped, with a
# message, where gnuplot is not installed; the error paths are not.
. "$(dirname "$0")/lib.sh"
data=$(cd "$(dirname "$0")/../data/plots" && pwd)
case $cl in /*) ;; *) cl=$PWD/$cl ;; esac
case $tools in /*) ;; *) tools=$PWD/$tools ;; esac
cd "$tmpd" || exit 1 # figures go to ./plots/out: keep them in the temporary folder

# png FILE: FILE starts with the 8 bytes of the PNG signature.
png() {
    if [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]
    then ok; else bad "$1 is not a PNG"; fi
}
# svg FILE: FILE is a non-empty SVG document.
svg() {
    if [ -s "$1" ] && grep -q "<svg" "$1" && grep -q "</svg>" "$1"; then ok; else
        bad "$1 is not an SVG"; fi
}
# rows FILE N: FILE has N data rows (lines not starting with '#', less the header).
rows() {
    n=$(grep -vc '^#' "$1")
    if [ "$((n - 1))" -eq "$2" ]; then ok; else bad "$1 has $((n - 1)) rows, want $2"; fi
}
# absent PATH: nothing was written there.
absent() {
    if [ ! -e "$1" ]; then ok; else bad "$1 should not exist"; fi
}

# --- help ---
run 0 plot --help;          has "$out" "usage: commlab plot FILE.csv"; has "$out" "--term"
run 0 help plot;            has "$out" "timeline"
run 0 --help;               has "$out" "plot"
run 0 price --help;         has "$out" "--plot"
run 0 sweep --help;         has "$out" "--plot"
run 0 run --help;           has "$out" "--timeline FILE.csv"

# --- bad input: checked in C before gnuplot runs (exit 2, line and value) ---
run 2 plot;                 has "$err" "which file?"
run 2 plot "$tmpd/none.csv"; has "$err" "cannot read CSV file '$tmpd/none.csv'"
run 2 plot a.csv b.csv c.csv; has "$err" "got 3 files"
run 2 plot --term jpeg "$data/compare.csv"; has "$err" "unknown --term 'jpeg'"
run 2 price --plot=gif;     has "$err" "unknown --term 'gif'"
printf 'pattern,backend\n' >"$tmpd/nokind.csv"
run 2 plot "$tmpd/nokind.csv"; has "$err" "nokind.csv:1: not a plot CSV"
printf '# commlab-plot: pie\n# title: t\na,b\n1,2\n' >"$tmpd/pie.csv"
run 2 plot "$tmpd/pie.csv"; has "$err" "pie.csv:1: unknown plot kind 'pie'"
printf '# commlab-plot: sweep\n# title: t\n' >"$tmpd/nohead.csv"
run 2 plot "$tmpd/nohead.csv"; has "$err" "nohead.csv:2: the header line is missing"
printf '# commlab-plot: sweep\n# title: t\nbytes,tier\n8,a\n' >"$tmpd/head.csv"
run 2 plot "$tmpd/head.csv"; has "$err" "head.csv:3: a sweep CSV's header must be"
sed '5s/,[^,]*$//' "$data/compare.csv" >"$tmpd/cols.csv"
run 2 plot "$tmpd/cols.csv"; has "$err" "cols.csv:5: expected 11 columns"; has "$err" "got 10"
sed '5s/,2.5e-07,/,fast,/' "$data/compare.csv" >"$tmpd/num.csv"
run 2 plot "$tmpd/num.csv"
has "$err" "num.csv:5: column 'measured_median_s' must be a number, got 'fast'"
sed '4s/,2,8,/,2,0,/' "$data/compare.csv" >"$tmpd/zero.csv"
run 2 plot "$tmpd/zero.csv"; has "$err" "zero.csv:4: column 'bytes' must be an integer >= 1, got '0'"
sed '6s/,3e-07,/,5e-07,/' "$data/compare.csv" >"$tmpd/minmax.csv"
run 2 plot "$tmpd/minmax.csv"; has "$err" "minmax.csv:6: measured_min_s <= measured_q1_s"
printf '# commlab-plot: tiers\n# title: t\n%s\n' "$(sed -n 3p "$data/tiers.csv")" >"$tmpd/empty.csv"
run 2 plot "$tmpd/empty.csv"; has "$err" "empty.csv: no data rows"
run 2 plot "$data/compare.csv" "$data/tiers.csv"
has "$err" "only when both are timelines; got compare and tiers"
absent plots/out

# --- no gnuplot: a clear error naming the package (exit 2) ---
# (export and unset: sh keeps an assignment put before a function call.)
export COMMLAB_GNUPLOT=/nonexistent/gnuplot
run 2 plot "$data/tiers.csv"
has "$err" "cannot find '/nonexistent/gnuplot'"; has "$err" "gnuplot-nox"
COMMLAB_GNUPLOT=no-such-gnuplot-here # a name is looked up on PATH
run 2 plot "$data/tiers.csv"; has "$err" "cannot find 'no-such-gnuplot-here'"
# gnuplot failing: exit 4 and nothing half-written kept.
COMMLAB_GNUPLOT=/bin/false
run 4 plot "$data/tiers.csv" --out "$tmpd/failed"
has "$err" "gnuplot failed on"; absent "$tmpd/failed/tiers.png"
unset COMMLAB_GNUPLOT

# --- run --timeline: one row per record of the last iteration ---
# pingpong modeled, 1 iteration: each rank a barrier (before the
# iteration), the iteration, a send and a receive: 8 records, as measured.
run 0 run pingpong --timeline pp.csv; has "$out" "timeline: pp.csv"
has pp.csv "# commlab-plot: timeline"; has pp.csv "# side: sim"; has pp.csv "# status: ok"
has pp.csv "pingpong, sim"; has pp.csv "2 ranks"; has pp.csv "host "
rows pp.csv 8
run 0 plot pp.csv --term dumb --out "$tmpd/unused"  # the file reads back
# Measured, 3 iterations: only the last (iteration 2) is kept; each rank
# a barrier, the iteration, a send and a receive: 8 records.
# The last iteration's rows: per rank its barrier, the iteration, a send
# and a receive, and (--sync window, the default) the barrier after it
# that carries the last start's spread.
run 0 run pingpong --backend shm --bind none --iters 3 --warmup 1 --bytes 4KiB --timeline ps.csv
has ps.csv "# side: shm"; has ps.csv "# iteration: 2"; rows ps.csv 10
run 0 run pingpong --backend shm --bind none --iters 3 --warmup 1 --bytes 4KiB --sync barrier \
    --timeline pb.csv
rows pb.csv 8
run 0 run pingpong --backend tcp --bind none --iters 2 --warmup 0 --bytes 4KiB --timeline pt.csv
has pt.csv "# side: tcp"; has pt.csv "# iteration: 1"; rows pt.csv 10
# A deadlock's records are written too: the barrier each rank finished,
# the iteration each ran until the deadlock ended it, and the sends that
# never completed (stalled: 1), modeled and measured.
run 3 run deadlock --bytes 1MiB --timeline dl.csv
has dl.csv "# status: deadlock"; rows dl.csv 6
has dl.csv "0,send,1e-06,1e-06,1e-06,1,1048576,0,1"
has dl.csv "1,send,1e-06,1e-06,1e-06,0,1048576,0,1"
# The figure names the deadlock's moment on the run's clock, as the report
# does ("deadlock at t = 1 us"): the rows count from the iteration, and
# "# origin_s:" says where that is on the run's clock.
has "$err" "deadlock at t = 1 us"; has dl.csv "# origin_s: "
run 0 plot dl.csv --term dumb; has "$out" "after t = 1 us"
# A pipeline's figure gives its step and its bubble: 4 stages and 4
# microbatches of 1 ms compute, GPipe's (p-1)/(m+p-1) = 3/7 = 42.9 % idle
# (chapter 02), a little more with the messages' time.
run 0 run pipeline -n 4 --compute 1ms --bytes 8 --timeline pipe.csv
run 0 plot pipe.csv --term dumb; has "$out" "step 14.0"; has "$out" "bubble 42.9 %"
# A stalled call starts where its rank's last record ended: rank 0 sends
# at 1 us and waits; rank 1 computes 1 ms first, and the deadlock is then.
cat >"$tmpd/late.c" <<'EOF'
#include "commlab.h"
int pattern(cl_comm *c, const cl_args *a)
{
    char *x = cl_alloc(c, a->bytes);
    if (cl_rank(c) == 1)
        cl_compute(c, 1e-3);
    return cl_send(c, x, a->bytes, 1 - cl_rank(c), 0);
}
EOF
run 3 run "$tmpd/late.c" --bytes 1MiB --timeline late.csv
has late.csv "0,send,1e-06,0.001001,0.001001,1,1048576,0,1"
has late.csv "1,send,0.001001,0.001001,0.001001,0,1048576,0,1"
# Measured with more ranks than cores, the figure's title says so.
ranks=$(($(nproc) + 1))
run 0 run ring -n "$ranks" --backend shm --bind none --iters 2 --warmup 0 --bytes 1KiB \
    --timeline over.csv
has over.csv "(oversubscribed: $ranks ranks on $(nproc) cores, waits include the scheduler)"
run 3 run deadlock --backend shm --bind none --bytes 1MiB --timeline dls.csv
has dls.csv "# status: deadlock"
if grep -q "^0,send,.*,1,1048576,0,1\$" dls.csv && grep -q "^1,send,.*,0,1048576,0,1\$" dls.csv
then ok; else bad "the measured deadlock's timeline lacks its stalled sends"; fi
run 2 run pingpong --sizes 8,16 --timeline x.csv; has "$err" "--timeline records one run"
run 2 run pingpong --timeline "$tmpd/no/such/dir/x.csv"; has "$err" "cannot write"
absent "$tmpd/no"

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "skip: gnuplot is not installed, figures not rendered (make deps installs gnuplot-nox)"
    finish
    exit $?
fi

# --- every template renders a PNG and an SVG ---
run 0 plot "$data/compare.csv"
for f in latency bandwidth error; do
    has "$out" "plots/out/compare-$f.png"; png "plots/out/compare-$f.png"
    svg "plots/out/compare-$f.svg"
done
run 0 plot "$data/tiers.csv"; png plots/out/tiers.png; svg plots/out/tiers.svg
run 0 plot "$data/sweep.csv"; png plots/out/sweep.png; svg plots/out/sweep.svg
run 0 plot "$data/validate.csv"; png plots/out/validate.png; svg plots/out/validate.svg
run 0 plot "$data/timeline-sim.csv"; png plots/out/timeline-sim.png
svg plots/out/timeline-sim.svg
run 0 plot "$data/timeline-sim.csv" "$data/timeline-shm.csv" --out "$tmpd/stack"
has "$out" "$tmpd/stack/timeline-sim-vs-timeline-shm.png"
png "$tmpd/stack/timeline-sim-vs-timeline-shm.png"
svg "$tmpd/stack/timeline-sim-vs-timeline-shm.svg"
run 0 plot dl.csv ps.csv --term png; png plots/out/dl-vs-ps.png; absent plots/out/dl-vs-ps.svg
run 0 plot dl.csv dls.csv --term dumb
has "$out" "send to 1"; has "$out" "send to 0"; has "$out" "never completed"

# --- price --plot and sweep --plot write the CSV next to the figures ---
run 0 price --bytes 256MiB --plot
has "$out" "plots/out/price.csv"; has plots/out/price.csv "# commlab-plot: tiers"
rows plots/out/price.csv 4; png plots/out/price.png; svg plots/out/price.svg
run 0 price --plot=svg --json; json price-plot; has "$err" "plots/out/price.svg"
run 0 sweep --sizes 8:1GiB:x4 --plot
has plots/out/sweep.csv "# commlab-plot: sweep"; png plots/out/sweep.png
run 0 plot plots/out/sweep.csv --out "$tmpd/again"; png "$tmpd/again/sweep.png"

# --- --term dumb draws in the terminal and writes no file ---
run 0 plot "$data/compare.csv" --term dumb --out "$tmpd/dumb"
has "$out" "latency vs message size: pingpong"; has "$out" "message size (bytes, log scale)"
absent "$tmpd/dumb"
# Where the protocol changes, the latency figure marks the eager limit the
# CSV names (compare and calibrate write it); a CSV without it has no mark.
sed '2a # eager_limit_bytes: 65536' "$data/compare.csv" >"$tmpd/eager.csv"
run 0 plot "$tmpd/eager.csv" --term dumb; has "$out" "eager limit (rendezvous above)"
run 0 plot "$data/compare.csv" --term dumb
if grep -q "rendezvous above" "$out"; then bad "an eager mark without an eager limit"; else ok; fi
# A pipeline's time is a step's, not a latency, and its size / time no
# link's bandwidth: the figures say so.
sed 's/pingpong/pipeline/g' "$data/compare.csv" >"$tmpd/pipe.csv"
run 0 plot "$tmpd/pipe.csv" --term dumb
has "$out" "time of one iteration vs message size: pipeline"
has "$out" "size / time of one iteration vs message size"
if grep -q "latency vs" "$out"; then bad "a pipeline's time called latency"; else ok; fi
run 0 price --plot=dumb; has "$out" "bandwidth term n / B"
# alpha, too thin to see at 256 MiB, is written on each bar with its share
# of T (1 us of 895.8 us on nvlink: 0.11 %; the course's tier table).
has "$out" "alpha 1 us = 0.11 %"; has "$out" "alpha 30 us = 0.035 %"
# ... and the legend does not offer alpha's colour where no bar shows it;
# at 64 KiB alpha is most of every bar (1 us of 1.218 us on nvlink).
has "$out" "latency term alpha: too thin to see"
run 0 price --bytes 64KiB --plot=dumb; has "$out" "alpha 1 us = 82 %"
if grep -q "too thin" "$out"; then bad "alpha called too thin at 64 KiB"; else ok; fi
run 0 plot "$data/timeline-sim.csv" "$data/timeline-shm.csv" --term dumb
has "$out" "modeled: pipeline"; has "$out" "measured: pipeline"
# A dumb plot is as wide as the terminal ($COLUMNS, else the terminal's
# own width) and its title is wrapped to fit, never clipped or dropped.
# (gnuplot starts a dumb page with a form feed, which is no column)
widest() { awk '{ gsub(/\f/, ""); if (length($0) > w) w = length($0) } END { print w + 0 }' "$out"; }
export COLUMNS=60
run 0 plot "$data/timeline-sim.csv" --term dumb
if [ "$(widest)" -eq 60 ]; then ok; else bad "COLUMNS=60 drew $(widest) columns"; fi
has "$out" "modeled: pipeline, sim (tier nvlink,"; has "$out" "full mesh of 3 ranks)"
has "$out" "host example"
export COLUMNS=150
run 0 plot "$data/timeline-sim.csv" "$data/timeline-shm.csv" --term dumb
if [ "$(widest)" -eq 150 ]; then ok; else bad "COLUMNS=150 drew $(widest) columns"; fi
has "$out" "modeled: pipeline, sim (tier nvlink, full mesh of 3 ranks), 3 ranks, 64 KiB, host example"
unset COLUMNS
# Titles reach gnuplot as data, quotes and all.
sed "2s/.*/# title: it's \"quoted\" @x \$y \`z\`/" "$data/tiers.csv" >"$tmpd/quote.csv"
run 0 plot "$tmpd/quote.csv" --term dumb; has "$out" "it's \"quoted\" @x \$y \`z\`"

finish
