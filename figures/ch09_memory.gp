# ch09_memory: bytes kept for the backward against n, naive vs flash
# (tangled from chapters/ch09_backward.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}
set logscale xy 2
set xrange [400:170000]
set yrange [0.0078125:1048576]
set xtics ('512' 512, '2k' 2048, '8k' 8192, '32k' 32768, '128k' 131072)
set ytics ('8 KiB' 0.0078125, '1 MiB' 1, '128 MiB' 128, '16 GiB' 16384, '1 TiB' 1048576)
set xlabel 'sequence length n (8 heads, float32)'
set ylabel 'bytes kept'
set key bottom right
set grid ytics lc rgb '#dddddd'
f = data.'/ch09_memory.dat'
M = 1048576.0
plot f u 1:($2/M) w lp lw 2 pt 7 lc rgb '#c44e52' t 'naive: P kept', \
     f u 1:($4/M) w l lw 2 dt 2 lc rgb '#55a868' t 'Q K V O dO dQ dK dV L (d = 64)', \
     f u 1:($3/M) w lp lw 2 pt 5 lc rgb '#4c72b0' t 'flash: L kept'
