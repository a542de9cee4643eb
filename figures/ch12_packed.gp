# ch12_packed: six sentences packed end to end, and the same batch padded
# (tangled from chapters/ch12_real_model.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}
file = data.'/ch12_packed.dat'
stats file u 3 nooutput
L = STATS_max
n = STATS_records
set xrange [0:n * L]
set yrange [-0.8:1.8]
set ytics ('padded' 0, 'packed' 1)
set xlabel 'token position in the batch'
set style fill solid 0.8 border lc rgb '#333333'
set key outside top center horizontal
plot file u ($2 + $3 / 2):(1):($3 / 2):(0.3):1 w boxxyerror lc variable notitle, \
     file u ($2 + $3 / 2):(1):(sprintf('%d', $1)) w labels notitle, \
     file u ($2):(1.45):(sprintf('%d', $2)) w labels font ',8' notitle, \
     file u (($1 - 1) * L + L / 2.0):(0):(L / 2.0):(0.3) w boxxyerror lc rgb '#bbbbbb' t 'padding', \
     file u (($1 - 1) * L + $3 / 2):(0):($3 / 2):(0.3):1 w boxxyerror lc variable notitle
