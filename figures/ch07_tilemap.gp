# ch07_tilemap: full, diagonal and skipped tiles of one head
# (tangled from chapters/ch07_causal_skip.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}

file = data.'/ch07_tilemap.dat'
stats file u 1 nooutput
T = STATS_max + 1
set xrange [-0.5:T - 0.5]
set yrange [T - 0.5:-0.5]
set size ratio -1
set xtics 1 out nomirror
set ytics 1 out nomirror
set xlabel 'key block'
set ylabel 'query block'

set palette defined (0 '#4c72b0', 1 '#dd8452', 2 '#eeeeee')
set cbrange [0:2]
unset colorbox
set key outside right center
plot file u 2:1:3 w image pixels notitle, \
     keyentry w boxes fs solid 1.0 border lc rgb '#4c72b0' fc rgb '#4c72b0' \
         t 'computed in full', \
     keyentry w boxes fs solid 1.0 border lc rgb '#dd8452' fc rgb '#dd8452' \
         t 'diagonal: computed, masked', \
     keyentry w boxes fs solid 1.0 border lc rgb '#999999' fc rgb '#eeeeee' t 'skipped'
