# ch10_launch: the tensor-core kernel's launch over chapter 4's tile grid, causal,
# N = 512: a block per 64 query rows (the grid's x; its y is the head), four warps
# of 16 rows each, a loop over key tiles of 64 (tangled from chapters/app_gpu_run.nw)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,7'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,10'
    set output out.'.svg'
}
N = 512; BQ = 64; BK = 64; ROWS = 16
# one box per (block, warp, key tile): visited (warp colour), or skipped (grey)
set print $T
do for [b = 0:N / BQ - 1] { do for [w = 0:BQ / ROWS - 1] { do for [t = 0:N / BK - 1] {
    print sprintf("%g %g %d", t * BK + BK / 2.0, b * BQ + w * ROWS + ROWS / 2.0, t <= b ? w : -1) } } }
unset print
set palette defined (-1 '#eeeeee', 0 '#4c72b0', 1 '#dd8452', 2 '#55a868', 3 '#c44e52')
set cbrange [-1:3]
unset colorbox
set style fill solid 1.0 border lc rgb 'white'
unset key
set xrange [0:N]
set yrange [N:0]
set size ratio -1
set xtics 0, BK, N out nomirror font ',6'
set ytics 0, BQ, N out nomirror font ',6'
set xlabel 'key j (tiles of 64: the loop inside a block)'
set ylabel 'query i'
do for [b = 0:N / BQ - 1] {
    set label sprintf('block %d', b) at N + 8, b * BQ + BQ / 2.0 font ',6'
}
set rmargin 14
set title 'grid (N/64, heads) → block of 128 threads → 4 warps (colours) → 16 query rows a warp; grey: tiles skipped' font ',7'
plot $T u 1:2:(BK / 2.0):(ROWS / 2.0):3 w boxxyerror fc palette
