if (term eq 'svg') {
    set terminal svg size 720,400 dynamic font 'DejaVu Sans,12'
} else {
    set terminal pdfcairo size 5in,2.8in font 'DejaVu Sans,9'
}
set output out.'.'.term
set title 'Terms of the running sum after each block'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set xlabel 'after block'
set ylabel 'e^{x_j - m}'
set key outside right title 'logit'
set yrange [0:*]
plot for [j=2:7] data.'/ch02_rebase.dat' using j:xtic(1) \
     title sprintf('x_%d', j-1)
