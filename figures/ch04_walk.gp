# ch04_walk: one query block's walk across the key blocks, and one row's state
# (tangled from chapters/ch04_tiled.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,8'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,11'
    set output out.'.svg'
}
tiles = data.'/ch04_walk_tiles.dat'
walk = data.'/ch04_walk.dat'
stats tiles u 1:2 nooutput
TQ = STATS_max_x + 1
TK = STATS_max_y + 1
stats tiles u ($3 > 0 ? $1 : NaN) nooutput
QB = STATS_min
set multiplot
set origin 0, 0
set size 0.5, 1
set xrange [-0.5:TK - 0.5]
set yrange [TQ - 0.5:-0.5]
set size ratio -1
set xtics 0, 2 out nomirror
set ytics 0, 2 out nomirror
set xlabel 'key block'
set ylabel 'query block'
set palette defined (0 '#e4e4e4', 1 '#4c72b0')
set cbrange [0:1]
unset colorbox
set style fill solid 1.0 border lc rgb 'white'
plot tiles u 2:1:(0.5):(0.5):3 w boxxyerror fc palette notitle, \
     tiles u ($3 > 0 && $2 == 0 ? 0 : NaN):1:(TK - 1):(0) \
         w vectors head filled lw 2 lc rgb '#dd8452' notitle
set size noratio
set autoscale
set xrange [-0.5:TK - 0.5]
set xtics 0, 2 out nomirror
set key off
set format y '%.1f'
tic(lo, hi) = hi > lo ? (hi - lo) / 3.0 : 1
stats walk u 2 nooutput
MTIC = tic(STATS_min, STATS_max)
stats walk u 3 nooutput
LTIC = tic(STATS_min, STATS_max)
stats walk u 5 nooutput
ATIC = tic(STATS_min, STATS_max)
set lmargin 10
set xlabel ''
set origin 0.5, 0.66
set size 0.5, 0.34
set ylabel 'm'
set ytics MTIC out nomirror
plot walk u 1:2 w linespoints pt 7 ps 0.4 lc rgb '#4c72b0'
set origin 0.5, 0.33
set ylabel 'ℓ'
set ytics LTIC out nomirror
plot walk u 1:3 w linespoints pt 7 ps 0.4 lc rgb '#dd8452'
set origin 0.5, 0
set xlabel 'key block'
set ylabel 'a_0'
set ytics ATIC out nomirror
plot walk u 1:5 w linespoints pt 7 ps 0.4 lc rgb '#55a868'
unset multiplot
