# ch10_pipeline: the cp.async double buffer as a timeline: tile j+1's copies in flight
# while the warps compute on tile j, and the block's two meetings per tile
# (tangled from chapters/app_gpu_run.nw)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,2.4in font 'DejaVu Sans,7'
    set output out.'.pdf'
} else {
    set terminal svg size 720,340 dynamic font 'DejaVu Sans,10'
    set output out.'.svg'
}
T = 4       # tiles
# a step j takes one unit: issue tile j+1, wait for tile j, meet, compute, meet
set print $COPY
print sprintf('%g %g %g "%s" %d', -0.43, 1, 0.55, "tile 0 → stage 0", 0)
do for [j = 0:T - 2] { print sprintf('%g %g %g "%s" %d', j + 0.575, 1, 0.55, sprintf("tile %d → stage %d", j + 1, (j + 1) % 2), (j + 1) % 2) }
set print $COMP
do for [j = 0:T - 1] { print sprintf('%g %g %g "%s" %d', j + 0.55, 0, 0.35, sprintf("tile %d, stage %d", j, j % 2), j % 2) }
unset print
set palette defined (0 '#9ecae1', 1 '#fdae6b')
set cbrange [0:1]
unset colorbox
set style fill solid 1.0 border lc rgb 'white'
unset key
set xrange [-1.1:T + 0.2]
set yrange [-0.7:1.7]
set ytics ('warps compute (mma.sync)' 0, 'copies in flight (cp.async)' 1) scale 0
set xtics 0, 1, T - 1 out nomirror
set xlabel 'step j of the loop over key tiles'
set lmargin 24
do for [j = 0:T - 1] {
    set arrow from j + 0.15, -0.6 to j + 0.15, 1.6 nohead dt 2 lc rgb '#555555'
    set arrow from j + 0.95, -0.6 to j + 0.95, 1.6 nohead dt 3 lc rgb '#c44e52'
}
set label 'wait for tile j, meet' at 0.17, 1.62 font ',6' tc rgb '#555555'
set label 'meet before reuse' at 0.97, -0.66 font ',6' tc rgb '#c44e52'
plot $COPY u 1:2:3:(0.28):5 w boxxyerror fc palette, '' u 1:2:4 w labels font ',6', \
     $COMP u 1:2:3:(0.28):5 w boxxyerror fc palette, '' u 1:2:4 w labels font ',6'
