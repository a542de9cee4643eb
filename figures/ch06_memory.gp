# ch06_memory: memory against sequence length, formulas and measurements
# (tangled from chapters/ch06_memory.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}

set logscale xy 2
set xrange [400:170000]
set yrange [0.25:2097152]
set xtics ('512' 512, '2k' 2048, '8k' 8192, '32k' 32768, '128k' 131072)
set ytics ('512 KiB' 0.5, '16 MiB' 16, '512 MiB' 512, '16 GiB' 16384, '512 GiB' 524288)
set xlabel 'sequence length n'
set ylabel 'bytes'
set key outside below center horizontal maxrows 3 width -2 height 1.5
set grid ytics lc rgb '#dddddd'

f = data.'/ch06_formulas.dat'
m = data.'/ch06_measured.dat'
plot f u 1:3 w l lw 2 lc rgb '#8172b2' dt 2 t 'scores, Llama 3.1 8B', \
     f u 1:2 w l lw 2 lc rgb '#c44e52' t 'scores, measured shape', \
     f u 1:6 w l lw 2 lc rgb '#937860' dt 3 t 'KV cache, Llama 3.1 8B', \
     f u 1:4 w l lw 2 lc rgb '#55a868' t 'Q, K, V, O', \
     f u 1:5 w l lw 2 lc rgb '#4c72b0' t 'a tile per head', \
     m u 1:2 w p pt 7 ps 1.0 lc rgb '#c44e52' t 'naive: allocator', \
     m u 1:3 w p pt 6 ps 1.6 lc rgb '#000000' t 'naive: process', \
     m u 1:4 w p pt 5 ps 0.9 lc rgb '#55a868' t 'tiled: allocator', \
     m u 1:5 w p pt 4 ps 1.5 lc rgb '#000000' t 'tiled: process'
