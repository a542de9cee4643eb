if (term eq 'svg') {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
} else {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
}
set output out.'.'.term
file = data.'/ch01_ladder.dat'
stats file index 0 using 2:3 nooutput
ylo = (STATS_min_x < STATS_min_y ? STATS_min_x : STATS_min_y) / 2
yhi = (STATS_max_x > STATS_max_y ? STATS_max_x : STATS_max_y) * 2
set logscale x 2
set logscale y 10
set logscale y2 10
set yrange [ylo:yhi]
set xtics ('4 KiB' 4096, '64 KiB' 65536, '1 MiB' 1048576, \
           '16 MiB' 16777216, '256 MiB' 268435456, '4 GiB' 4294967296)
set ytics nomirror
set y2tics
set xlabel 'working set per core'
set ylabel 'read bandwidth, GB/s'
set y2label 'latency, ns'
set key outside top center horizontal
cache(c) = c > 0 ? c : NaN
plot file index 0 using 1:2 with linespoints pt 7 ps 0.6 lw 2 \
         title 'read, one core', \
     file index 0 using 1:3 with linespoints pt 5 ps 0.6 lw 2 \
         title 'read, all cores', \
     file index 0 using 1:4 axes x1y2 with linespoints pt 6 ps 0.7 dt 2 \
         lw 2 title 'latency (right)', \
     file index 1 using (cache($1)):(ylo):(0):(yhi - ylo) with vectors \
         nohead dt 3 lc rgb 'gray50' notitle, \
     file index 1 using (cache($1)):(yhi / 1.25):2 with labels \
         offset 1.2,0 left textcolor rgb 'gray30' notitle
