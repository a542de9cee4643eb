# ch03_overflow: the logits against the fp16 and fp32 overflow lines
# (tangled from chapters/ch03_compose.nw; do not edit)
if (term eq 'svg') {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
} else {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
}
stats data.'/ch03_limits.dat' every ::0::0 using 1 nooutput
f16 = STATS_min
stats data.'/ch03_limits.dat' every ::1::1 using 1 nooutput
top = STATS_min
stats data.'/ch03_limits.dat' every ::2::2 using 1 nooutput
f32 = STATS_min
stats data.'/ch03_logits.dat' using ($2 + $3) nooutput
set xlabel 'logit x'
set ylabel 'logits per bin of width 1'
set xrange [*:f32 + 8]
set yrange [0:1.2 * STATS_max]
set key top left
set style fill solid 0.85 border -1
set boxwidth 1.0
set arrow 1 from f16, graph 0 to f16, graph 1 nohead dt 2 lw 2 lc rgb '#c0392b'
set arrow 2 from f32, graph 0 to f32, graph 1 nohead dt 2 lw 2 lc rgb '#555555'
set arrow 3 from top, graph 0 to top, graph 0.55 nohead lw 1 lc rgb '#3b6ea5'
set label 1 sprintf('fp16 e^x overflows: %.1f', f16) at f16 + 1, graph 0.93
set label 2 sprintf('fp32: %.1f', f32) at f32 - 1, graph 0.93 right
set label 3 sprintf('largest logit %.1f', top) at top + 1, graph 0.5
plot data.'/ch03_logits.dat' using 1:($2+$3) with boxes lc rgb '#c0392b' \
         title 'fp16 e^x = inf', \
     '' using 1:2 with boxes lc rgb '#3b6ea5' title 'fp16 e^x finite'
