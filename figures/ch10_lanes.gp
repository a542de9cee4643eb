# ch10_lanes: which columns of a row's accumulator each lane of the fused kernel keeps,
# from gpu_fused_column_of (tangled from chapters/app_gpu_run.nw)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,8'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}
file = data.'/ch10_lanes.dat'
colour(lane, owned) = owned == 0 ? 0xeeeeee : lane == 5 ? 0x08519c : 0x9ecae1
unset key
set style fill solid 1.0 border lc rgb 'white'
set xrange [-0.5:31.5]
set yrange [3.5:-0.5]
small = term eq 'pdf' ? ',7' : ',10'
set xtics 0, 1, 31 scale 0 font small
set ytics ('acc[0]' 0, 'acc[1]' 1, 'acc[2]' 2, 'acc[3]' 3) scale 0
set xlabel 'lane λ'
unset border
plot file using 1:2:(0.5):(0.5):(colour($1, $4)) with boxxyerror lc rgb variable, \
     '' using 1:2:($4 == 1 && $1 != 5 ? sprintf('%d', $3) : '') with labels rotate by 90, \
     '' using 1:2:($4 == 1 && $1 == 5 ? sprintf('%d', $3) : '') with labels rotate by 90 tc rgb 'white'
