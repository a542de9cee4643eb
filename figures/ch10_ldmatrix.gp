# ch10_ldmatrix: ldmatrix.x4, plain and .trans: which lane's address names each row,
# and which lane receives each pair of elements (tangled from chapters/app_gpu_run.nw)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,8'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,11'
    set output out.'.svg'
}
# matrix i (register i of every lane), row r named by lane 8i + r; element (r, c)
# goes to lane 4r + c/2 plainly, to lane 4c + r/2 with .trans. A lane's pair (two
# columns plainly, two rows with .trans) carries its number once, between them.
set print $M
do for [i = 0:3] { do for [r = 0:7] { do for [c = 0:7] {
    print sprintf("%d %d %d %d %d %d %d", 10 * i + c, r, i, 4 * r + c / 2, 4 * c + r / 2, c % 2, r % 2) } } }
set print $ROWS
do for [i = 0:3] { do for [r = 0:7] { print sprintf("%g %d %d", 10 * i - 1.2, r, 8 * i + r) } }
unset print
set palette defined (0 '#c6dbef', 1 '#fdd0a2', 2 '#c7e9c0', 3 '#dadaeb')
set cbrange [0:3]
unset colorbox
set style fill solid 1.0 border lc rgb 'white'
unset key
unset tics
unset border
set lmargin 1
set rmargin 1
set xrange [-2.2:38]
set yrange [7.5:-0.5]
set size ratio -1
set multiplot layout 2, 1
set title "ldmatrix.x4: the lane that receives each pair"
plot $M u 1:2:(0.5):(0.5):3 w boxxyerror fc palette, \
     '' u ($6 == 0 ? $1 + 0.5 : NaN):2:(sprintf('%d', $4)) w labels, \
     $ROWS u 1:2:(sprintf('%d', $3)) w labels tc rgb '#555555'
set title "ldmatrix.x4.trans: each lane receives a pair of a column"
plot $M u 1:2:(0.5):(0.5):3 w boxxyerror fc palette, \
     '' u 1:($7 == 0 ? $2 + 0.5 : NaN):(sprintf('%d', $5)) w labels rotate by 90, \
     $ROWS u 1:2:(sprintf('%d', $3)) w labels tc rgb '#555555'
unset multiplot
