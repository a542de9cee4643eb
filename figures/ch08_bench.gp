# ch08_bench: the recorded benchmark, GFLOP/s against n (d = 64, no mask)
# (tangled from chapters/app_timing.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}
f = data.'/ch08_bench.dat'
set datafile columnheaders
stats f nooutput
set logscale x 2
set xrange [400:20000]
set xtics ('512' 512, '1k' 1024, '2k' 2048, '4k' 4096, '8k' 8192, '16k' 16384)
set xlabel 'sequence length n (8 heads, d = 64, no mask)'
set ylabel 'GFLOP/s'
set key outside right top
set grid lc rgb '#dddddd'
if (!exists("STATS_blocks")) {
    set yrange [0:1]
    set label 1 'no benchmark recorded (make bench)' at graph 0.5, 0.5 center
    plot NaN notitle
} else {
    plot for [i=0:STATS_blocks-1] f index i u 1:2 w lp pt 7 ps 0.8 lw 2 title columnheader(1)
}
