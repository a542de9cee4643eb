# ch05_error.gp — error against block size: exact tiled vs approximate.
# Tangled from chapters/ch05_exact.nw. Data: ch05_exact --data DIR.
if (term eq 'svg') {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
} else {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
}

set logscale x 2
set logscale y 10
set format y '10^{%L}'
set xrange [12:1400]
set yrange [1e-8:30]
set xtics (16, 32, 64, 128, 256, 512, 1024)
set xlabel 'block size B, or window width w (keys)'
set ylabel 'max |O - O_{exact}|'
set key tmargin center horizontal box
set grid ytics lc rgb '#dddddd'

set style line 1 pt 7 ps 0.9 lc rgb '#1f77b4'
set style line 2 dt 2 pt 4 ps 1.3 lc rgb '#d62728'
set style line 3 pt 9 lc rgb '#2ca02c'
set style line 4 dt 3 lc rgb '#777777'

file = data.'/ch05_error.dat'
plot file using 1:3 with linespoints ls 1 title 'window of w = B keys', \
     file using 1:4 with linespoints ls 2 title 'tiled, not rescaled', \
     file using 1:2 with linespoints ls 3 title 'tiled, exact', \
     1e-5 with lines ls 4 title 'test tolerance'
