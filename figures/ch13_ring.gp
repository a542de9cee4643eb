# ch13_ring: who holds which slice at step t (tangled from chapters/ch13_ring.nw)
if (term eq 'svg') { set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'; set output out.'.svg' } \
else { set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'; set output out.'.pdf' }
set xrange [-0.5:3.5]; set yrange [3.5:-0.5]
set xtics 1; set ytics 1
set xlabel 'step t'; set ylabel 'rank r'
set cbrange [0:3]; set palette defined (0 '#1b9e77', 1 '#d95f02', 2 '#7570b3', 3 '#e7298a')
unset colorbox
set key off
plot data.'/ch13_ring.dat' using 1:2:3 with image, \
     '' using 1:2:(sprintf('K/V %d', $3)) with labels font ',14' textcolor 'white', \
     '' using ($1+0.25):2:(0.5):(0.9) with vectors head filled lc 'black'
