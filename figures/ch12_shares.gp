# ch12_shares: the shares of the encoder's time, from the recorded benchmark
# (tangled from chapters/ch12_real_model.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}
file = data.'/ch12_shares.dat'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border lc rgb '#333333'
set boxwidth 0.7
set yrange [0:100]
set ylabel "share of the encoder's time (%)"
set xtics rotate by -30 font ',8' nomirror
set key outside top center horizontal
plot file u ($2 * 100):xtic(1) lc rgb '#d95f02' t 'attention', \
     '' u ($3 * 100) lc rgb '#7570b3' t 'linear layers', \
     '' u ($4 * 100) lc rgb '#bbbbbb' t 'the rest'
