# ch11_tiles.gp — the tile registers during one step of the walk, d = 64.
# Tangled from chapters/ch11_amx.nw.
if (term eq 'svg') set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'; \
else set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
set output out.'.'.term
file = data.'/ch11_tiles.dat'
set xrange [-0.6:1.6]
set yrange [8:-1]
unset key; unset ytics; unset border
set xtics ("scores: S = QK^T" 0, "values: PV" 1) scale 0
set style fill solid 0.25 border -1
set boxwidth 0.9
colour(l) = l eq '-' ? 0xeeeeee : strstrt(l, 'Q') ? 0x4477aa : strstrt(l, 'S') || strstrt(l, 'PV') ? 0xcc6677 : 0x228833
plot file using 2:1:($2-0.45):($2+0.45):($1-0.42):($1+0.42):(colour(strcol(3))) \
         with boxxyerror lc rgb variable, \
     file using 2:1:(sprintf('tmm%d  %s', $1, strcol(3))) with labels
