# ch13_zigzag: the causal pairs of 2P chunks and the rank computing each (tangled from chapters/ch13_ring.nw)
if (term eq 'svg') { set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'; set output out.'.svg' } \
else { set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'; set output out.'.pdf' }
set xrange [-0.5:7.5]; set yrange [7.5:-0.5]
set xtics 1; set ytics 1
set xlabel 'key chunk'; set ylabel 'query chunk'
set cbrange [-1:3]; set palette defined (-1 'white', -0.5 'white', -0.49 '#1b9e77', 1 '#d95f02', 2 '#7570b3', 3 '#e7298a')
unset colorbox
set key off
plot data.'/ch13_zigzag.dat' using 1:2:3 with image, \
     '' using 1:2:($3 >= 0 ? sprintf('%d', $3) : '') with labels textcolor 'white'
