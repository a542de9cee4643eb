# ch10_ldmatrix: ldmatrix.x4, plain and .trans: which lane's address names each row,
# and which lane receives each pair of elements (tangled from chapters/ch10_gpu.nw)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,7'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,10'
    set output out.'.svg'
}
# matrix i (register i of every lane), row r named by lane 8i + r; element (r, c)
# goes to lane 4r + c/2 plainly, to lane 4c + r/2 with .trans
set print $M
do for [i = 0:3] { do for [r = 0:7] { do for [c = 0:7] {
    print sprintf("%d %d %d %d %d", 10 * i + c, r, i, 4 * r + c / 2, 4 * c + r / 2) } } }
set print $ROWS
do for [i = 0:3] { do for [r = 0:7] { print sprintf("%d %d %d", 10 * i - 1.3, r, 8 * i + r) } }
unset print
set palette defined (0 '#c6dbef', 1 '#fdd0a2', 2 '#c7e9c0', 3 '#dadaeb')
set cbrange [0:3]
unset colorbox
set style fill solid 1.0 border lc rgb 'white'
unset key
unset tics
set xrange [-2.2:38]
set yrange [7.5:-0.5]
set size ratio -1
set multiplot layout 2, 1
set title "ldmatrix.x4: lane receiving each pair (register i from matrix i); left of each row, the lane whose address names it" font ',7'
plot $M u 1:2:(0.5):(0.5):3 w boxxyerror fc palette, '' u 1:2:(sprintf('%d', $4)) w labels font ',5', \
     $ROWS u 1:2:(sprintf('%d', $3)) w labels font ',5' tc rgb '#555555'
set title "ldmatrix.x4.trans: the same rows, each lane now receives a pair of a column" font ',7'
plot $M u 1:2:(0.5):(0.5):3 w boxxyerror fc palette, '' u 1:2:(sprintf('%d', $5)) w labels font ',5', \
     $ROWS u 1:2:(sprintf('%d', $3)) w labels font ',5' tc rgb '#555555'
unset multiplot
