# ch08_roofline: measured roofs of this machine and the kernels of the ladder
# (tangled from chapters/app_timing.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}
f = data.'/ch08_roofline.dat'
stats f index 1 using 2 nooutput
levels = STATS_records
stats f index 1 using 4 nooutput
peak1 = STATS_max
stats f index 1 using 5 nooutput
peakall = STATS_max
stats f index 1 every ::(levels-1)::(levels-1) using 2 nooutput
dram1 = STATS_max
stats f index 1 every ::(levels-1)::(levels-1) using 3 nooutput
dramall = STATS_max
stats f index 1 every ::0::0 using 2 nooutput
l1one = STATS_max
stats f index 2 using 1 nooutput
xmin = STATS_min
stats f index 2 using 2 nooutput
xmax = STATS_min
stats f index 2 using 3 nooutput
ymin = STATS_min
stats f index 2 using 4 nooutput
ymax = STATS_min
roof(bw, peak, x) = (bw * x < peak) ? bw * x : peak
set logscale xy 10
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set samples 400
set xlabel 'arithmetic intensity (operations per byte)'
set ylabel 'GFLOP/s'
set key outside right top
set grid lc rgb '#dddddd'
plot roof(dram1, peak1, x) w l lw 2 lc rgb '#4c72b0' t 'memory, 1 core', \
     roof(dramall, peakall, x) w l lw 2 lc rgb '#4c72b0' dt 2 t 'memory, all cores', \
     roof(l1one, peak1, x) w l lw 1 lc rgb '#8172b2' dt 3 t 'L1, 1 core', \
     f index 0 u 1:2:($7 != 0 ? $4 - $1 : NaN):($5 - $2) w vectors nohead lc rgb '#999999' \
       notitle, \
     f index 0 u ($6 != 0 ? NaN : $4):5:3 w labels left font ',8' notitle, \
     f index 0 u ($6 != 0 ? $4 : NaN):5:3 w labels right font ',8' notitle, \
     f index 0 u 1:2 w p pt 7 ps 1.0 lc rgb '#c44e52' t 'kernels'
