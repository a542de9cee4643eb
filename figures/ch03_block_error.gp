# ch03_block_error: online softmax error against block size
# (tangled from chapters/ch03_compose.nw; do not edit)
if (term eq 'svg') {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
} else {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
}
stats data.'/ch03_block_error.dat' using 2 nooutput
high = STATS_max
stats data.'/ch03_block_error.dat' using 3 nooutput
high = STATS_max > high ? STATS_max : high
set logscale x 2
set xlabel 'block size b'
set ylabel 'max error, ulps of 2^{-24}'
set yrange [0:1.3 * high]
set key top center horizontal
set grid ytics
plot data.'/ch03_block_error.dat' using 1:2 with linespoints pt 7 ps 0.5 \
         lc rgb '#3b6ea5' title 'online softmax', \
     '' using 1:3 with lines dt 2 lw 2 lc rgb '#c0392b' \
         title 'two-pass softmax (one long sum)'
