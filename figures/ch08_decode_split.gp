# ch08_decode_split: which thread owns which span of keys, and the merge's order
# (tangled from chapters/app_timing.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}
set xlabel 'key (thousands)'
set ylabel 'threads'
set yrange [-0.2:5] ; set ytics ('merge' 0, '1' 1, '2' 2, '3' 3, '4' 4)
set key off
set style fill solid 0.6 border lc rgb 'black'
f = data.'/ch08_decode_split.dat'
plot f using (($3+$4)/2000.0):1:(($4-$3)/2000.0*0.96):(0.35):($5+1) with boxxyerror lc variable, \
     f using (($3+$4)/2000.0):1:(sprintf('%d', $5)) with labels, \
     f using ($1 == 1 ? $3/1000.0 : 1/0):(0):(($4-$3)/1000.0):(0) with vectors head filled lc rgb 'black'
