# ch11_walk.gp — the causal walk of one head of n = 256, from attn_tile_classify.
# Tangled from chapters/ch11_amx.nw.
if (term eq 'svg') set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'; \
else set terminal pdfcairo size 5in,3in font 'DejaVu Sans,8'
set output out.'.'.term
file = data.'/ch11_walk.dat'
colour(k) = k == 0 ? 0xeeeeee : k == 1 ? 0x6baed6 : 0xfd8d3c
unset key
set size ratio -1
set xrange [0:256]
set yrange [256:0]
set xtics 0, 32, 256 scale 0
set ytics 0, 32, 256 scale 0
set xlabel 'keys (blocks of 32)'
set ylabel 'queries (slices of 16)'
set style fill solid 1.0 border lc rgb 'white'
set label 'computed, every key visible' at 270, 40 left tc rgb '#3182bd'
set label 'computed, masked' at 270, 60 left tc rgb '#e6550d'
set label 'skipped' at 270, 80 left tc rgb '#999999'
set rmargin 22
plot file using (32 * $2 + 16):(16 * $1 + 8):(16):(8):(colour($3)) with boxxyerror lc rgb variable, \
     '' using (32 * $2 + 16):(16 * $1 + 8):($4 > 0 ? sprintf('%d', $4) : '') with labels
