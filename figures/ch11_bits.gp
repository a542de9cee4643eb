# ch11_bits.gp — fp32 and bf16 bits of four floats, from bf16_round's output.
# Tangled from chapters/ch11_amx.nw.
if (term eq 'svg') set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'; \
else set terminal pdfcairo size 5in,3in font 'DejaVu Sans,8'
set output out.'.'.term
file = data.'/ch11_bits.dat'
values = data.'/ch11_bits_values.dat'
field(b) = b == 31 ? 0xcc6677 : b >= 23 ? 0x88ccee : b >= 16 ? 0x44aa99 : b == 15 ? 0xddaa33 : 0xdddddd
y(i) = 3.6 * i + 1
unset key; unset tics; unset border
set xrange [-3.5:31.6]
set yrange [14.6:-2.6]
set style fill solid 1.0 border lc rgb 'white'
set label 'sign' at 0, -1 center
set label 'exponent' at 4.5, -1 center
set label 'fraction kept' at 12, -1 center
set label 'rounding bit' at 16, -2 center
set arrow from 16, -1.6 to 16, 0.3 nohead lc rgb '#ddaa33'
set label 'dropped' at 24, -1 center
plot file using (31 - $2):(y($1)):(0.5):(0.5):(field($2)) with boxxyerror lc rgb variable, \
     '' using (31 - $2):(y($1)):(sprintf('%d', $3)) with labels, \
     '' using ($4 < 0 ? NaN : 31 - $2):(y($1) + 1):(0.5):(0.5):(field($2)) with boxxyerror lc rgb variable, \
     '' using ($4 < 0 ? NaN : 31 - $2):(y($1) + 1):(sprintf('%d', $4)) with labels, \
     values using (-0.5):(y($1) - 1):2 with labels left, \
     values using (-0.8):(y($1)):('fp32') with labels right, \
     values using (-0.8):(y($1) + 1):('bf16') with labels right
