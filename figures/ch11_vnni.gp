# ch11_vnni.gp — the VNNI packing of a block of V, from amx_pack_values' output.
# Tangled from chapters/ch11_amx.nw.
if (term eq 'svg') set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'; \
else set terminal pdfcairo size 5in,3in font 'DejaVu Sans,8'
set output out.'.'.term
file = data.'/ch11_vnni.dat'
shown(r, e) = r < 4 && e < 16
pair(x) = (k = int(x), k % 2 ? (k/2 == 0 ? 0xc6dbef : k/2 == 1 ? 0xfdd0a2 : k/2 == 2 ? 0xc7e9c0 : 0xdadaeb) \
                : (k/2 == 0 ? 0x6baed6 : k/2 == 1 ? 0xfd8d3c : k/2 == 2 ? 0x74c476 : 0x9e9ac8))
unset key; unset tics; unset border
set xrange [-2.6:15.6]
set yrange [14:-2.2]
set style fill solid 1.0 border lc rgb 'white'
set label 'block of V: (key, column)' at 7.5, -1.4 center
set label 'tile row k: for each column n, the pair (key 2k, key 2k + 1)' at 7.5, 8.5 center
do for [c = 0:7] { set label sprintf('%d', c) at 4 + c, -0.8 center }
do for [k = 0:7] { set label sprintf('key %d', k) at 3.4, k right }
do for [n = 0:7] { set label sprintf('n = %d', n) at 2 * n + 0.5, 9.3 center }
do for [r = 0:3] { set label sprintf('row %d', r) at -0.6, 10 + r right }
plot file using (shown($1, $2) ? 4 + $4 : NaN):3:(0.5):(0.5):(pair($3)) with boxxyerror lc rgb variable, \
     '' using (shown($1, $2) ? 4 + $4 : NaN):3:(sprintf('%d,%d', $3, $4)) with labels, \
     '' using (shown($1, $2) ? $2 : NaN):(10 + $1):(0.5):(0.5):(pair($3)) with boxxyerror lc rgb variable, \
     '' using (shown($1, $2) ? $2 : NaN):(10 + $1):(sprintf('%d,%d', $3, $4)) with labels
