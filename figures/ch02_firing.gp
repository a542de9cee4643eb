if (term eq 'svg') {
    set terminal svg size 720,400 dynamic font 'DejaVu Sans,12'
} else {
    set terminal pdfcairo size 5in,2.8in font 'DejaVu Sans,9'
}
set output out.'.'.term
set title 'Per-block maximum and running maximum, row 0, blocks of 64'
set xlabel 'block'
set ylabel 'logit'
set key outside below center horizontal
set xrange [-1:32]
file = data.'/ch02_firing.dat'
plot file using 1:2 with points pt 7 ps 0.6 title 'block max', \
     file using 1:3 with steps lw 2 title 'running max', \
     file using ($5 > 0 ? $1 : NaN):3 with points pt 6 ps 2 lc rgb 'red' title 'correction fires', \
     file using ($5 > 0 ? $1 : NaN):3:(sprintf('x%.3f', $4)) with labels left offset 1.2,-0.9 notitle
