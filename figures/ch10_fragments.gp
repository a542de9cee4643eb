# ch10_fragments: which lane holds which elements of mma.m16n8k16's A, B and C
# (tangled from chapters/app_gpu_run.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,8'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,11'
    set output out.'.svg'
}
# lane = 4g + t; A: a0..a3 by (row >= 8) + 2 (col >= 8); B: b0, b1 by row >= 8;
# C: c0..c3 by 2 (row >= 8) + col % 2. A lane's two neighbouring elements (a pair
# of columns in A and C, of rows in B) carry its number once, between them.
set print $A
do for [r = 0:15] { do for [c = 0:15] { print sprintf("%d %d %d %d %d", c, r, 4 * (r % 8) + (c % 8) / 2, r / 8 + 2 * (c / 8), c % 2) } }
set print $B
do for [r = 0:15] { do for [c = 0:7] { print sprintf("%d %d %d %d %d", c, r, 4 * c + (r % 8) / 2, r / 8, r % 2) } }
set print $C
do for [r = 0:15] { do for [c = 0:7] { print sprintf("%d %d %d %d %d", c, r, 4 * (r % 8) + c / 2, 2 * (r / 8) + c % 2, c % 2) } }
unset print
small = term eq 'pdf' ? ',7' : ',10'
set palette defined (0 '#c6dbef', 1 '#fdd0a2', 2 '#c7e9c0', 3 '#dadaeb')
set cbrange [0:3]
unset colorbox
set style fill solid 1.0 border lc rgb 'white'
unset key
set tics scale 0 font small
set multiplot
set yrange [15.5:-0.5]
set ytics 0, 4, 15
set origin 0, 0.02
set size 0.5, 0.95
set size ratio -1
set xrange [-0.5:15.5]
set xtics 0, 4, 15
set title "A (16 × 16): registers a0 a1 a2 a3" 
set xlabel 'column k' 
set ylabel 'row m' 
plot $A u 1:2:(0.5):(0.5):4 w boxxyerror fc palette, \
     '' u ($5 == 0 ? $1 + 0.5 : NaN):2:(sprintf('%d', $3)) w labels
set ylabel ''
set origin 0.47, 0.02
set size 0.27, 0.95
set xrange [-0.5:7.5]
set xtics 0, 4, 7
set title "B (16 × 8): b0 b1" 
set xlabel 'column n' 
plot $B u 1:2:(0.5):(0.5):4 w boxxyerror fc palette, \
     '' u 1:($5 == 0 ? $2 + 0.5 : NaN):(sprintf('%d', $3)) w labels rotate by 90
set origin 0.73, 0.02
set title "C, D (16 × 8): c0 c1 c2 c3" 
plot $C u 1:2:(0.5):(0.5):4 w boxxyerror fc palette, \
     '' u ($5 == 0 ? $1 + 0.5 : NaN):2:(sprintf('%d', $3)) w labels
unset multiplot
